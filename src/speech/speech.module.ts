import { Module } from '@nestjs/common';
import { CatalogModule } from '../catalog/catalog.module';
import { ChatModule } from '../chat/chat.module';
import { SpeechController } from './speech.controller';

@Module({
  imports: [CatalogModule, ChatModule],
  controllers: [SpeechController],
})
export class SpeechModule {}
