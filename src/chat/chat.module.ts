import { Module } from '@nestjs/common';
import { CatalogModule } from '../catalog/catalog.module';
import { UpstreamModule } from '../upstream/upstream.module';
import { ChatController } from './chat.controller';
import { ForwardedCall } from './forwarded-call';
import { NativeCallService } from './native-call.service';
import { TranslatedCallService } from './translated-call.service';
import { TranslationContextProvider } from './translation-context.provider';

@Module({
  imports: [CatalogModule, UpstreamModule],
  controllers: [ChatController],
  providers: [ForwardedCall, NativeCallService, TranslatedCallService, TranslationContextProvider],
  exports: [ForwardedCall, NativeCallService],
})
export class ChatModule {}
