import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { Clock } from '../common/clock';
import { Rounds } from '../common/rounds';
import { VIDEO_SETTINGS, VideoSettings } from '../config/settings/video.settings';
import { VideoTaskService } from './video-task.service';
import { VideoTaskStore } from './video-task.store';

/** SPEC.md Limits: a task still unsettled 8 days after submission is charged its reservation. */
const UNSETTLED_CHARGE_AFTER_MS = 8 * 24 * 60 * 60 * 1000;

const INTERVAL_NAME = 'video-task-reconciler';

/**
 * Follows every unfinished video task without any client polling (SPEC.md Metering: tasks are
 * followed in the background). Each round claims the due tasks (`FOR UPDATE SKIP LOCKED`, so
 * replicas share the work and never poll one task at once) and looks at each; settlement
 * itself is conditional, so a task is settled once even if two looks overlap.
 */
@Injectable()
export class VideoReconciler implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('VideoReconciler');
  private readonly rounds: Rounds<number>;

  constructor(
    private readonly store: VideoTaskStore,
    private readonly tasks: VideoTaskService,
    scheduler: SchedulerRegistry,
    private readonly clock: Clock,
    @Inject(VIDEO_SETTINGS) private readonly settings: VideoSettings,
  ) {
    this.rounds = new Rounds(scheduler, INTERVAL_NAME, () => this.claimAndFollow(), 0);
  }

  onApplicationBootstrap(): void {
    if (this.settings.reconcileIntervalMs > 0) this.rounds.every(this.settings.reconcileIntervalMs);
  }

  /** Stops claiming and waits for the round under way, so no claimed task is left half-done. */
  beforeApplicationShutdown(): Promise<void> {
    return this.rounds.stop();
  }

  /** One round: claims the due tasks and looks at each; resolves to how many it claimed. Rounds never overlap. */
  runOnce(): Promise<number> {
    return this.rounds.run();
  }

  private async claimAndFollow(): Promise<number> {
    const now = this.clock.now();
    let claimed;
    try {
      claimed = await this.store.claimDue(new Date(now), new Date(now + this.settings.claimLeaseMs), this.settings.claimBatchSize);
    } catch (error) {
      this.logger.warn(`could not claim due video tasks: ${String(error)}`);
      return 0;
    }
    await Promise.all(
      claimed.map((task) =>
        this.tasks.follow(task, now, UNSETTLED_CHARGE_AFTER_MS).catch((error) => {
          // No request is being served: the task's line bears its submit's request id, the id of its usage record.
          this.logger.warn({
            msg: `video task ${task.id}: ${String(error)}; it is looked at again when its claim runs out`,
            request_id: task.submitRequestId,
            task_id: task.id,
          });
        }),
      ),
    );
    return claimed.length;
  }
}
