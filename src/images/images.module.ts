import { Module } from '@nestjs/common';
import { CatalogModule } from '../catalog/catalog.module';
import { ChatModule } from '../chat/chat.module';
import { ImagesController } from './images.controller';

@Module({
  imports: [CatalogModule, ChatModule],
  controllers: [ImagesController],
})
export class ImagesModule {}
