import { Module } from '@nestjs/common';
import { ForwardingModule } from '../forwarding/forwarding.module';
import { ChatController } from './chat.controller';
import { TranslatedCallService } from './translated-call.service';
import { TranslationContextProvider } from './translation-context.provider';

@Module({
  imports: [ForwardingModule],
  controllers: [ChatController],
  providers: [TranslatedCallService, TranslationContextProvider],
})
export class ChatModule {}
