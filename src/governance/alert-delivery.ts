import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { createHmac } from 'node:crypto';
import { DataSource } from 'typeorm';
import { Clock } from '../common/clock';
import { Rounds } from '../common/rounds';
import { ALERT_SETTINGS, AlertSettings } from '../config/settings/alerts.settings';
import { returnedRows } from '../database/returned-rows';
import { alertEventOf, STORED_ALERT_COLUMNS, StoredAlert, storedAlertOf, StoredAlertRecord } from './budget-alerts';

const INTERVAL_NAME = 'alert-delivery';
/** Alerts one replica claims per round, all sent at once: a round lasts at most one send's timeout. */
const CLAIM_BATCH = 20;
/** A send gives up after this long; the alert is tried again later. */
const SEND_TIMEOUT_MS = 10_000;
/** A claimed alert stays with its replica this long (well over a send's timeout), then another may claim it: its replica died mid-send. */
const CLAIM_LEASE_MS = 30_000;
const FIRST_RETRY_MS = 1_000;
/** A receiver that is down for days is still tried hourly, not forgotten. */
const LAST_RETRY_MS = 3_600_000;
/** The length of `budget_alert.last_error`. */
const MAX_ERROR_LENGTH = 256;
/** A receiver that keeps failing is warned about at its first failure and every this many, not at each retry. */
const WARN_EVERY = 10;

/**
 * The `X-Gateway-Signature` of a delivery: HMAC-SHA256 under the secret over `<t>.<body>`, the
 * body's exact bytes, as `t=<unix seconds>,v1=<hex>`. The time inside the signed text lets a
 * receiver refuse an old delivery replayed.
 */
export function signAlert(secret: string, body: string, unixSeconds: number): string {
  const digest = createHmac('sha256', secret).update(`${unixSeconds}.${body}`, 'utf8').digest('hex');
  return `t=${unixSeconds},v1=${digest}`;
}

/** The wait after a failed attempt: 1 s, doubling with each attempt, at most an hour. */
export function retryDelayMs(attempts: number): number {
  return Math.min(FIRST_RETRY_MS * 2 ** Math.max(0, attempts - 1), LAST_RETRY_MS);
}

/**
 * Delivers fired budget alerts to ALERT_WEBHOOK_URL from the `budget_alert` outbox. Each round
 * claims the due alerts (`FOR UPDATE SKIP LOCKED`, moving their next attempt a lease ahead), so
 * one replica at a time sends a given alert; a failed send is retried with back-off, under the
 * same event id. Delivery is at least once: an alert whose success could not be written down is
 * sent again when its lease runs out, and receivers dedupe by the id.
 */
@Injectable()
export class AlertDelivery implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('BudgetAlerts');
  private readonly rounds: Rounds<number>;
  private failing = false;
  /** Sends since start by outcome, for the metrics. */
  readonly outcomes = { delivered: 0, failed: 0 };

  constructor(
    private readonly dataSource: DataSource,
    scheduler: SchedulerRegistry,
    private readonly clock: Clock,
    @Inject(ALERT_SETTINGS) private readonly settings: AlertSettings,
  ) {
    this.rounds = new Rounds(scheduler, INTERVAL_NAME, () => this.deliverDue(), 0);
  }

  onApplicationBootstrap(): void {
    if (this.webhook()) this.rounds.every(this.settings.deliveryIntervalMs);
  }

  /** Stops claiming and waits for the round under way, so no alert is left claimed and unsent. */
  beforeApplicationShutdown(): Promise<void> {
    return this.rounds.stop();
  }

  /** Alerts were fired: deliver them now rather than at the next interval (a round under way may have claimed before they were committed). */
  nudge(): void {
    this.rounds.nudge();
  }

  /** One round; rounds never overlap. Resolves to how many alerts it claimed, whether the database answered or not. */
  runOnce(): Promise<number> {
    return this.rounds.run();
  }

  private webhook(): { url: string; secret: string } | undefined {
    const { webhookUrl: url, webhookSecret: secret } = this.settings;
    return url && secret ? { url, secret } : undefined;
  }

  private async deliverDue(): Promise<number> {
    const webhook = this.webhook();
    if (!webhook) return 0;
    let claimed: StoredAlert[];
    try {
      claimed = await this.claimDue();
    } catch (error) {
      this.databaseFailed(error);
      return 0;
    }
    if (this.failing) this.logger.log('budget alerts are delivered again');
    this.failing = false;
    await Promise.all(claimed.map(async (alert) => this.settle(alert, await this.send(alert, webhook))));
    return claimed.length;
  }

  private async claimDue(): Promise<StoredAlert[]> {
    const now = this.clock.now();
    const rows = returnedRows<StoredAlertRecord>(
      await this.dataSource.query(
        `UPDATE budget_alert AS a SET next_attempt_at = $2, attempts = a.attempts + 1
         WHERE a.id IN (
           SELECT id FROM budget_alert WHERE delivered_at IS NULL AND next_attempt_at <= $1
           ORDER BY next_attempt_at LIMIT $3 FOR UPDATE SKIP LOCKED)
         RETURNING ${STORED_ALERT_COLUMNS}`,
        [new Date(now), new Date(now + CLAIM_LEASE_MS), CLAIM_BATCH],
      ),
    );
    return rows.map(storedAlertOf);
  }

  /** POSTs the alert's event, signed; resolves to what went wrong, or undefined once the receiver took it (2xx). */
  private async send(alert: StoredAlert, webhook: { url: string; secret: string }): Promise<string | undefined> {
    const body = JSON.stringify(alertEventOf(alert));
    const headers = {
      'content-type': 'application/json',
      'x-gateway-event-id': alert.id,
      'x-gateway-signature': signAlert(webhook.secret, body, Math.floor(this.clock.now() / 1000)),
    };
    try {
      // A redirect is a failure, not followed: the signed alert goes to the configured URL only.
      const response = await fetch(webhook.url, { method: 'POST', headers, body, redirect: 'manual', signal: AbortSignal.timeout(SEND_TIMEOUT_MS) });
      if (response.ok) {
        await response.body?.cancel();
        return undefined;
      }
      const detail = await response.text().catch(() => '');
      return `HTTP ${response.status}${detail.trim() ? `: ${detail.trim()}` : ''}`;
    } catch (error) {
      return sendFailureOf(error);
    }
  }

  /** Writes down the attempt: delivered, or the next attempt after the back-off. */
  private async settle(alert: StoredAlert, failure: string | undefined): Promise<void> {
    const now = this.clock.now();
    this.outcomes[failure === undefined ? 'delivered' : 'failed'] += 1;
    try {
      if (failure === undefined) {
        await this.dataSource.query('UPDATE budget_alert SET delivered_at = $2 WHERE id = $1', [alert.id, new Date(now)]);
        return;
      }
      const reason = failure.slice(0, MAX_ERROR_LENGTH);
      const delayMs = retryDelayMs(alert.attempts);
      await this.dataSource.query('UPDATE budget_alert SET next_attempt_at = $2, last_error = $3 WHERE id = $1 AND delivered_at IS NULL', [
        alert.id,
        new Date(now + delayMs),
        reason,
      ]);
      if (alert.attempts === 1 || alert.attempts % WARN_EVERY === 0) {
        this.logger.warn(
          `budget alert ${alert.id} (owner ${alert.ownerId}, ${alert.threshold} %) not delivered, attempt ${alert.attempts}: ${reason}; next attempt in ${delayMs / 1000} s`,
        );
      }
    } catch (error) {
      // The alert stays claimed until its lease runs out, and is sent again then.
      this.databaseFailed(error);
    }
  }

  private databaseFailed(error: unknown): void {
    if (!this.failing) this.logger.warn(`budget alerts not delivered until the database answers: ${String(error)}`);
    this.failing = true;
  }
}

/** A send that got no answer: a timeout, or the network's reason (fetch hides it in `cause`). */
function sendFailureOf(error: unknown): string {
  // AbortSignal.timeout's DOMException is not an Error in every realm: its name tells.
  if ((error as { name?: unknown } | null)?.name === 'TimeoutError') return `no answer within ${SEND_TIMEOUT_MS / 1000} s`;
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? error.cause.message : error.cause === undefined ? '' : String(error.cause);
  return cause ? `${error.message}: ${cause}` : error.message;
}
