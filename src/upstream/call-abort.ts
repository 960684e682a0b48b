import { EventEmitter } from 'node:events';

/**
 * Cancels one upstream call when its client goes away. undici takes an EventEmitter with
 * `aborted` and an `abort` event in place of an AbortSignal; this costs a fraction of an
 * AbortController (an EventTarget with its own internal state), which takes a visible share of
 * the gateway's CPU per call (measured: see docs/performance.md).
 */
export class CallAbort extends EventEmitter {
  aborted = false;

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    this.emit('abort');
  }
}
