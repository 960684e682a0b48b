import { Module } from '@nestjs/common';
import { CatalogModule } from '../catalog/catalog.module';
import { ChatModule } from '../chat/chat.module';
import { UpstreamModule } from '../upstream/upstream.module';
import { VendorBVideoController, VendorCVideoController } from './video.controller';
import { VideoReconciler } from './video-reconciler';
import { VideoTaskService } from './video-task.service';
import { VideoTaskStore } from './video-task.store';
import { VideoUpstream } from './video-upstream';

@Module({
  imports: [CatalogModule, UpstreamModule, ChatModule],
  controllers: [VendorCVideoController, VendorBVideoController],
  providers: [VideoTaskStore, VideoUpstream, VideoTaskService, VideoReconciler],
  exports: [VideoReconciler],
})
export class VideoModule {}
