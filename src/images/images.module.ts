import { Module } from '@nestjs/common';
import { ForwardingModule } from '../forwarding/forwarding.module';
import { ImagesController } from './images.controller';

@Module({
  imports: [ForwardingModule],
  controllers: [ImagesController],
})
export class ImagesModule {}
