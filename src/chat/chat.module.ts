import { Module } from '@nestjs/common';
import { CatalogModule } from '../catalog/catalog.module';
import { UpstreamModule } from '../upstream/upstream.module';
import { ChatController } from './chat.controller';
import { NativeCallService } from './native-call.service';

@Module({
  imports: [CatalogModule, UpstreamModule],
  controllers: [ChatController],
  providers: [NativeCallService],
})
export class ChatModule {}
