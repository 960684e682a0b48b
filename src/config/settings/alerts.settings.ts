import { positiveWholeFrom } from '../env-numbers';

/** Settings of budget alerts' delivery (environment, docs/configuration.md). */

export interface AlertSettings {
  /**
   * Where fired alerts are POSTed (`ALERT_WEBHOOK_URL`, http or https). Absent: alerts are still
   * fired and audited, and wait undelivered in `budget_alert`.
   */
  webhookUrl?: string;
  /** Signs each delivery (`ALERT_WEBHOOK_SECRET`, at least 16 characters), so receivers can tell the gateway's alerts from forgeries. */
  webhookSecret?: string;
  /** How often each replica looks for alerts due a delivery attempt (`ALERT_DELIVERY_MS`). */
  deliveryIntervalMs: number;
}
export const ALERT_SETTINGS = Symbol('ALERT_SETTINGS');

/** A shorter secret is guessable enough to forge alerts with. */
export const MIN_SECRET_LENGTH = 16;

/** The alert settings of the environment; a webhook that could not be signed or reached stops the start, naming the variable, never its value. */
export function alertSettingsFrom(env: NodeJS.ProcessEnv): AlertSettings {
  const deliveryIntervalMs = positiveWholeFrom(env, 'ALERT_DELIVERY_MS', 1_000);
  const webhookUrl = env.ALERT_WEBHOOK_URL?.trim();
  if (!webhookUrl) return { deliveryIntervalMs };
  if (!isHttpUrl(webhookUrl)) throw new Error('ALERT_WEBHOOK_URL must be an http:// or https:// URL');
  const webhookSecret = env.ALERT_WEBHOOK_SECRET ?? '';
  if (webhookSecret.length < MIN_SECRET_LENGTH) {
    throw new Error(
      `ALERT_WEBHOOK_URL is set, so ALERT_WEBHOOK_SECRET must be too: at least ${MIN_SECRET_LENGTH} characters that sign each alert (openssl rand -hex 32)`,
    );
  }
  return { webhookUrl, webhookSecret, deliveryIntervalMs };
}

function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}
