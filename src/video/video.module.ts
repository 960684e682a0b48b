import { Module } from '@nestjs/common';
import { ForwardingModule } from '../forwarding/forwarding.module';
import { VendorBVideoController, VendorCVideoController } from './video.controller';
import { VideoReconciler } from './video-reconciler';
import { VideoTaskService } from './video-task.service';
import { VideoTaskStore } from './video-task.store';
import { VideoUpstream } from './video-upstream';

@Module({
  imports: [ForwardingModule],
  controllers: [VendorCVideoController, VendorBVideoController],
  providers: [VideoTaskStore, VideoUpstream, VideoTaskService, VideoReconciler],
  exports: [VideoReconciler],
})
export class VideoModule {}
