import type { VideoSettings } from '../../src/config/settings/video.settings';
import type { GatewayHarness } from './gateway-harness';

/** Keys of the video suites: two owners with two keys each, two members, a tight budget, a narrow scope. */
export const VIDEO_KEYS = {
  teamA1: 'gk-video-team-a-0001',
  teamA2: 'gk-video-team-a-0002',
  teamB: 'gk-video-team-b-0001',
  alice1: 'gk-video-alice-0001',
  alice2: 'gk-video-alice-0002',
  bob: 'gk-video-bob-0001',
  tight: 'gk-video-tight-0001',
  chatOnly: 'gk-video-chat-only-0001',
} as const;

export const VENDOR_C = {
  submit: '/vendor-c/v2/video_generation',
  query: (id: string) => `/vendor-c/v2/query/video_generation/${id}`,
  cancel: (id: string) => `/vendor-c/v2/video_generation/${id}`,
};

export const VENDOR_B = {
  submit: '/vendor-b/api/v3/contents/generations/tasks',
  query: (id: string) => `/vendor-b/api/v3/contents/generations/tasks/${id}`,
  cancel: (id: string) => `/vendor-b/api/v3/contents/generations/tasks/${id}`,
};

/** Nano-units (1e-9 of the currency) per currency unit. */
export const NANO = 1_000_000_000n;

/**
 * Prices of the video models, in currency units: video-c per second and per image, tiered by
 * resolution and video input; video-b per 1M output tokens, tiered by resolution.
 */
export function videoConfigYaml(simulator: string): string {
  return `
upstreams:
  - id: line-a
    base_url: ${simulator}
    api_key: \${TEST_VENDOR_KEY}
  - id: line-b
    base_url: ${simulator}
    api_key: \${TEST_VENDOR_KEY}
models:
  - id: video-c
    upstream_model: vendor-video-c-2
    interfaces: [video_c]
    lines: [line-a]
    prices: { output_seconds: 0.05, input_seconds: 0.02, input_image_count: 0.01 }
    price_tiers:
      - resolution: 1080p
        video_input: true
        prices: { output_seconds: 0.15 }
      - resolution: 1080p
        prices: { output_seconds: 0.1 }
  - id: video-b
    upstream_model: vendor-video-b-1
    interfaces: [video_b]
    lines: [line-b]
    prices: { output_video_tokens: 2 }
    price_tiers:
      - resolution: 1080p
        prices: { output_video_tokens: 3 }
      - resolution: 480p
        prices: { output_video_tokens: 1 }
  - id: chat-model
    upstream_model: vendor-chat-2025-01
    interfaces: [chat_completions]
    lines: [line-a]
owners:
  - { id: team-a, kind: project, budget: 100 }
  - { id: team-b, kind: project, budget: 100 }
  - { id: alice, kind: member }
  - { id: bob, kind: member }
  - { id: tight, kind: project, budget: 1 }
keys:
  - { key: ${VIDEO_KEYS.teamA1}, owner: team-a, models: ["*"] }
  - { key: ${VIDEO_KEYS.teamA2}, owner: team-a, models: ["*"] }
  - { key: ${VIDEO_KEYS.teamB}, owner: team-b, models: ["*"] }
  - { key: ${VIDEO_KEYS.alice1}, owner: alice, models: ["*"] }
  - { key: ${VIDEO_KEYS.alice2}, owner: alice, models: [video-c] }
  - { key: ${VIDEO_KEYS.bob}, owner: bob, models: ["*"] }
  - { key: ${VIDEO_KEYS.tight}, owner: tight, models: ["*"] }
  - { key: ${VIDEO_KEYS.chatOnly}, owner: team-a, models: [chat-model] }
`;
}

/** Background reconciler off (tests run rounds themselves); short, exact poll delays. */
export const VIDEO_TEST_SETTINGS: VideoSettings = {
  reconcileIntervalMs: 0,
  firstPollDelayMs: 1_000,
  maxPollDelayMs: 8_000,
  claimLeaseMs: 60_000,
  claimBatchSize: 50,
  submitLostAfterMs: 600_000,
};

export interface Answer {
  status: number;
  text: string;
  body: any;
  headers: Headers;
}

export async function call(
  gateway: GatewayHarness,
  method: 'GET' | 'POST' | 'DELETE',
  path: string,
  key: string | undefined,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const response = await fetch(`${gateway.url}${path}`, {
    method,
    headers: {
      ...(key ? { authorization: `Bearer ${key}` } : {}),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: response.status, text, body: parsed, headers: response.headers };
}

/** The owner's money columns, read from the database. */
export async function ownerMoney(gateway: GatewayHarness, ownerId: string): Promise<{ spent: bigint; reserved: bigint }> {
  const [row] = await gateway.dataSource.query('SELECT spent_nano, reserved_nano FROM quota_owner WHERE id = $1', [ownerId]);
  return { spent: BigInt(row.spent_nano), reserved: BigInt(row.reserved_nano) };
}

/** The task's row, read from the database. */
export async function taskRow(gateway: GatewayHarness, id: string): Promise<Record<string, any>> {
  const [row] = await gateway.dataSource.query('SELECT * FROM video_task WHERE id = $1', [id]);
  return row;
}
