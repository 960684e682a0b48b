import { Module } from '@nestjs/common';
import { ForwardingModule } from '../forwarding/forwarding.module';
import { SpeechController } from './speech.controller';

@Module({
  imports: [ForwardingModule],
  controllers: [SpeechController],
})
export class SpeechModule {}
