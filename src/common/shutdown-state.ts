import { Injectable } from '@nestjs/common';

/**
 * Whether the process has been told to stop. The graceful shutdown sets it at the first signal;
 * readiness (`GET /health/ready`) answers 503 from then on, so a load balancer that follows it
 * stops sending calls while the process still serves them (`SHUTDOWN_DELAY_MS`).
 */
@Injectable()
export class ShutdownState {
  private signal: NodeJS.Signals | undefined;

  get stopping(): boolean {
    return this.signal !== undefined;
  }

  /** The signal that started the shutdown, undefined while serving. */
  get cause(): NodeJS.Signals | undefined {
    return this.signal;
  }

  begin(signal: NodeJS.Signals): void {
    this.signal ??= signal;
  }
}
