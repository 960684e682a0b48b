import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { UsageRetention } from '../src/metering/usage-retention.service';
import { GatewayHarness } from './support/gateway-harness';
import { recordingClients } from './support/billing-kit';
import { Answer, httpCall } from './support/admin-kit';
import { KEYS } from './support/test-config';

/**
 * The spend audit (`GET /admin/usage/verify`) on the records the gateway wrote for calls of every
 * kind through the official SDKs: nothing differs after them; drift forced into the database
 * with SQL is found, each kind where it belongs; the owner and range narrow what is checked; a
 * price change leaves the earlier records verifiable at the prices they were billed at; and the
 * days retention has reached are left alone.
 */

/** The long-context tier's threshold: the simulator counts a quarter of the prompt JSON's bytes as input tokens. */
const THRESHOLD = 300;
const LONG_PROMPT = `No markers here: ${'a long shared prefix of many plain words '.repeat(45).trim()}`;
const DAY_MS = 86_400_000;
const MISSING_SHEET = 'f'.repeat(32);

function configYaml(simulator: string): string {
  return `
upstreams:
  - id: line-a
    base_url: ${simulator}
    api_key: \${TEST_VENDOR_KEY}
models:
  - id: chat-model
    upstream_model: vendor-chat-2025-01
    interfaces: [chat_completions]
    lines: [line-a]
    prices: { input_tokens: 2.5, cached_input_tokens: 1.25, output_tokens: 10 }
  - id: messages-model
    upstream_model: vendor-messages-2025-02
    interfaces: [messages]
    lines: [line-a]
    max_tokens: 8192
    prices: { input_tokens: 3, cached_input_tokens: 0.3, cache_write_input_tokens: 3.75, output_tokens: 15 }
  - id: long-chat
    upstream_model: vendor-chat-long
    interfaces: [chat_completions]
    lines: [line-a]
    prices: { input_tokens: 2, cached_input_tokens: 1, output_tokens: 8 }
    price_tiers:
      - input_tokens_above: ${THRESHOLD}
        prices: { input_tokens: 4, output_tokens: 12 }
  - id: image-b
    upstream_model: vendor-image-b-4
    interfaces: [images_b]
    lines: [line-a]
    prices: { output_images: 0.04, input_images: 0.002 }
    price_tiers:
      - max_output_pixels: 1048576
        prices: { output_images: 0.02 }
      - max_output_pixels: 4194304
        prices: { output_images: 0.03 }
owners:
  - id: team-a
    kind: project
    budget: 100
  - id: alice
    kind: member
keys:
  - key: ${KEYS.all}
    owner: team-a
    models: ["*"]
  - key: ${KEYS.member}
    owner: alice
    models: ["*"]
`;
}

interface StoredRecord {
  request_id: string;
  owner_id: string;
  model: string;
  started_at: Date;
  usage: Record<string, number> | null;
  cost_nano: string;
  price_sheet: string | null;
  price_basis: Record<string, unknown> | null;
}

const dayOf = (at: Date): string => at.toISOString().slice(0, 10);

describe('spend audit (GET /admin/usage/verify)', () => {
  let gateway: GatewayHarness;
  let openai: OpenAI;
  let anthropic: Anthropic;
  /** X-Request-Id of every answer the SDKs received, streams included. */
  let requestIds: string[];
  /** The request id of each call made in beforeAll, by name. */
  const calls: Record<'chat' | 'stream' | 'messages' | 'long' | 'images' | 'alice', string> = {} as never;

  const verify = (query = ''): Promise<Answer> => httpCall(gateway.url, 'GET', `/admin/usage/verify${query}`);

  /** The audit's answer to a query that must pass. */
  async function audited(query = ''): Promise<any> {
    await gateway.flushUsage();
    const answer = await verify(query);
    expect({ query, status: answer.status }).toEqual({ query, status: 200 });
    return answer.body;
  }

  const sql = <T = unknown>(text: string, values: unknown[] = []): Promise<T[]> => gateway.dataSource.query(text, values);

  async function stored(requestId: string): Promise<StoredRecord> {
    const [row] = await sql<StoredRecord>(
      `SELECT request_id, owner_id, model, started_at, usage, cost_nano::text AS cost_nano, price_sheet, price_basis FROM usage_record WHERE request_id = $1`,
      [requestId],
    );
    expect(row).toBeDefined();
    return { ...row, started_at: new Date(row.started_at) };
  }

  async function recordCount(): Promise<number> {
    const [{ count }] = await sql<{ count: number }>(`SELECT count(*)::int AS count FROM usage_record`);
    return count;
  }

  /** The daily total of a record's day, owner and model. */
  async function dailyCost(record: StoredRecord): Promise<bigint> {
    const [{ cost_nano }] = await sql<{ cost_nano: string }>(
      `SELECT cost_nano::text AS cost_nano FROM usage_daily WHERE day = $1 AND owner_id = $2 AND model = $3`,
      [dayOf(record.started_at), record.owner_id, record.model],
    );
    return BigInt(cost_nano);
  }

  beforeAll(async () => {
    gateway = await GatewayHarness.start({ configYaml, settings: { usageRetention: { days: 5, intervalMs: 0, batchSize: 100 } } });
    ({ openai, anthropic, requestIds } = recordingClients(gateway.url, KEYS.all));
    const member = recordingClients(gateway.url, KEYS.member);
    const alice = member.openai;
    const last = () => requestIds[requestIds.length - 1];

    await openai.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'Tally the ledger' }] });
    calls.chat = last();
    const stream = await openai.chat.completions.create({
      model: 'chat-model',
      messages: [{ role: 'user', content: 'Tally the ledger again' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    for await (const chunk of stream) void chunk;
    calls.stream = last();
    await anthropic.messages.create({ model: 'messages-model', max_tokens: 1024, messages: [{ role: 'user', content: 'Count the coins' }] });
    calls.messages = last();
    await openai.chat.completions.create({ model: 'long-chat', messages: [{ role: 'user', content: LONG_PROMPT }] });
    calls.long = last();
    const image = await httpCall(
      gateway.url,
      'POST',
      '/vendor-b/api/v3/images/generations',
      { model: 'image-b', prompt: 'A red bicycle by a canal', size: '2K' },
      { authorization: `Bearer ${KEYS.all}` },
    );
    expect(image.status).toBe(200);
    calls.images = image.headers.get('x-request-id') ?? '';
    await alice.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'My own ledger' }] });
    calls.alice = member.requestIds[0];
    await gateway.flushUsage();
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  it('finds nothing to report after calls of every kind, having checked each of their records', async () => {
    const long = await stored(calls.long);
    const images = await stored(calls.images);
    const all = await Promise.all(Object.values(calls).map(stored));

    const answer = await audited();

    // The calls priced by more than their model's base prices: a long-context tier, pixel tiers.
    expect(long.usage!.input_tokens).toBeGreaterThan(THRESHOLD);
    expect(images.price_basis).toEqual({ output_pixels: [2048 * 2048] });
    expect(images.cost_nano).toBe('30000000');
    for (const record of all) expect(record.price_sheet).toMatch(/^[0-9a-f]{32}$/);
    expect(answer).toEqual({
      owner: null,
      from: null,
      to: null,
      records_checked: 6,
      records_without_prices: 0,
      owners_checked: 2,
      unlisted_differences: 0,
      differences: [],
    });
  });

  it('reports a record whose cost was edited, and its daily total, while the spent amount still matches the totals', async () => {
    const record = await stored(calls.chat);
    const total = await dailyCost(record);
    await sql(`UPDATE usage_record SET cost_nano = cost_nano + 1000 WHERE request_id = $1`, [calls.chat]);
    try {
      const answer = await audited();

      expect(answer.differences).toEqual([
        {
          kind: 'record_cost',
          request_id: calls.chat,
          owner_id: 'team-a',
          model: 'chat-model',
          started_at: record.started_at.toISOString(),
          cost_nano: (BigInt(record.cost_nano) + 1000n).toString(),
          recomputed_nano: record.cost_nano,
          difference_nano: '1000',
        },
        {
          kind: 'daily_total',
          owner_id: 'team-a',
          day: dayOf(record.started_at),
          model: 'chat-model',
          total_nano: total.toString(),
          records_nano: (total + 1000n).toString(),
        },
      ]);
    } finally {
      await sql(`UPDATE usage_record SET cost_nano = cost_nano - 1000 WHERE request_id = $1`, [calls.chat]);
    }
    expect((await audited()).differences).toEqual([]);
  });

  it('reports an owner whose spent amount was edited, with no day of its records differing', async () => {
    const [{ spent_nano: spent }] = await sql<{ spent_nano: string }>(`SELECT spent_nano::text AS spent_nano FROM quota_owner WHERE id = 'alice'`);
    const alice = await stored(calls.alice);
    await sql(`UPDATE quota_owner SET spent_nano = spent_nano + 777 WHERE id = 'alice'`);
    try {
      const answer = await audited();

      expect(spent).toBe(alice.cost_nano);
      expect(answer.differences).toEqual([
        { kind: 'owner_spent', owner_id: 'alice', spent_nano: (BigInt(spent) + 777n).toString(), records_nano: spent, difference_nano: '777', days: [] },
      ]);
    } finally {
      await sql(`UPDATE quota_owner SET spent_nano = spent_nano - 777 WHERE id = 'alice'`);
    }
    expect((await audited()).differences).toEqual([]);
  });

  it('reports every record billed at a stored price sheet whose price was edited', async () => {
    const messages = await stored(calls.messages);
    const billed = await sql<{ request_id: string }>(`SELECT request_id FROM usage_record WHERE price_sheet = $1`, [messages.price_sheet]);
    const [{ pricing }] = await sql<{ pricing: { prices: Record<string, string> } }>(`SELECT pricing FROM price_sheet WHERE id = $1`, [messages.price_sheet]);
    // Twice the output price: the recomputed cost is higher by output tokens × 15 per 1M tokens.
    await sql(`UPDATE price_sheet SET pricing = jsonb_set(pricing, '{prices,output_tokens}', '"30"') WHERE id = $1`, [messages.price_sheet]);
    try {
      const answer = await audited();

      expect(pricing.prices.output_tokens).toBe('15');
      expect(billed.map((row) => row.request_id)).toEqual([calls.messages]);
      expect(messages.usage!.output_tokens).toBeGreaterThan(0);
      const more = BigInt(messages.usage!.output_tokens!) * 15_000n;
      expect(answer.differences).toEqual([
        {
          kind: 'record_cost',
          request_id: calls.messages,
          owner_id: 'team-a',
          model: 'messages-model',
          started_at: messages.started_at.toISOString(),
          cost_nano: messages.cost_nano,
          recomputed_nano: (BigInt(messages.cost_nano) + more).toString(),
          difference_nano: (-more).toString(),
        },
      ]);
    } finally {
      await sql(`UPDATE price_sheet SET pricing = jsonb_set(pricing, '{prices,output_tokens}', '"15"') WHERE id = $1`, [messages.price_sheet]);
    }
    expect((await audited()).differences).toEqual([]);
  });

  it('reports a record naming a price sheet that is not stored', async () => {
    const alice = await stored(calls.alice);
    await sql(`UPDATE usage_record SET price_sheet = $2 WHERE request_id = $1`, [calls.alice, MISSING_SHEET]);
    try {
      const answer = await audited();

      expect(answer).toMatchObject({ records_checked: 6, records_without_prices: 0 });
      expect(answer.differences).toEqual([{ kind: 'price_sheet_missing', request_id: calls.alice, owner_id: 'alice', price_sheet: MISSING_SHEET }]);
    } finally {
      await sql(`UPDATE usage_record SET price_sheet = $2 WHERE request_id = $1`, [calls.alice, alice.price_sheet]);
    }
    expect((await audited()).differences).toEqual([]);
  });

  it('checks only the records of the owner and of the range given, and the daily totals of the days the range touches', async () => {
    const alice = await stored(calls.alice);
    const long = await stored(calls.long);
    const images = await stored(calls.images);
    const from = long.started_at.toISOString();
    const to = images.started_at.toISOString();
    const [{ count: inRange }] = await sql<{ count: number }>(`SELECT count(*)::int AS count FROM usage_record WHERE started_at >= $1 AND started_at < $2`, [
      from,
      to,
    ]);
    const total = await dailyCost(alice);
    await sql(`UPDATE usage_record SET cost_nano = cost_nano + 5 WHERE request_id = $1`, [calls.alice]);
    try {
      const team = await audited('?owner=team-a');
      const own = await audited('?owner=alice');
      const ranged = await audited(`?from=${from}&to=${to}`);
      const yesterday = await audited(`?owner=alice&to=${new Date(Date.parse(dayOf(alice.started_at))).toISOString()}`);

      expect(team).toEqual({
        owner: 'team-a',
        from: null,
        to: null,
        records_checked: 5,
        records_without_prices: 0,
        owners_checked: 1,
        unlisted_differences: 0,
        differences: [],
      });
      const dailyTotal = {
        kind: 'daily_total',
        owner_id: 'alice',
        day: dayOf(alice.started_at),
        model: 'chat-model',
        total_nano: total.toString(),
        records_nano: (total + 5n).toString(),
      };
      expect(own).toMatchObject({ owner: 'alice', records_checked: 1, owners_checked: 1 });
      expect(own.differences).toEqual([expect.objectContaining({ kind: 'record_cost', request_id: calls.alice, difference_nano: '5' }), dailyTotal]);
      // The range holds the long call and not alice's later one; the days it touches are compared whole.
      const touched = dayOf(long.started_at) <= dailyTotal.day && dailyTotal.day <= dayOf(new Date(Date.parse(to) - 1));
      expect(inRange).toBeGreaterThanOrEqual(1);
      expect(inRange).toBeLessThan(5);
      expect(ranged).toMatchObject({ from, to, records_checked: inRange, owners_checked: 2 });
      expect(ranged.differences).toEqual(touched ? [dailyTotal] : []);
      // Up to the start of alice's day: neither her record nor its day.
      expect(yesterday).toMatchObject({ records_checked: 0, differences: [] });
    } finally {
      await sql(`UPDATE usage_record SET cost_nano = cost_nano - 5 WHERE request_id = $1`, [calls.alice]);
    }
  });

  it.each([
    ['a range that ends before it starts', '?from=2026-11-02&to=2026-11-01', 'to: must not be before from'],
    ['a time without zone', '?from=2026-11-01T10:00:00', 'from: must be an ISO 8601 date'],
    ['an empty owner', '?owner=', 'owner'],
    ['an unknown filter', '?model=chat-model', 'model: is not a field of this request'],
  ])('refuses %s with 400 invalid_request', async (_label, query, message) => {
    const answer = await verify(query);

    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ type: 'invalid_request_error' });
    expect(answer.body.error.message).toContain(message);
  });

  it('verifies the records made before a price change at their own prices, and bills later calls on a new sheet', async () => {
    const before = await stored(calls.chat);
    const model = await httpCall(gateway.url, 'GET', '/admin/models/chat-model');
    const patched = await httpCall(gateway.url, 'PATCH', '/admin/models/chat-model', {
      version: model.body.version,
      prices: { input_tokens: 5, cached_input_tokens: 1.25, output_tokens: 20 },
    });
    expect(patched.status).toBe(200);

    await openai.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'Tally the ledger' }] });
    await gateway.flushUsage();
    const after = await stored(requestIds[requestIds.length - 1]);
    const sheets = await sql<{ id: string; pricing: { prices: Record<string, string> } }>(`SELECT id, pricing FROM price_sheet WHERE id IN ($1, $2)`, [
      before.price_sheet,
      after.price_sheet,
    ]);
    const answer = await audited();

    expect(after.price_sheet).not.toBe(before.price_sheet);
    expect(Object.fromEntries(sheets.map((sheet) => [sheet.id, sheet.pricing.prices.output_tokens]))).toEqual({
      [before.price_sheet!]: '10',
      [after.price_sheet!]: '20',
    });
    // The same question at twice the output price, and more for the input.
    expect(after.usage).toEqual(before.usage);
    expect(BigInt(after.cost_nano)).toBeGreaterThan(BigInt(before.cost_nano));
    expect(answer).toMatchObject({ records_checked: 7, records_without_prices: 0, differences: [] });
  });

  it('leaves alone the days retention has reached, whose totals outlive their records', async () => {
    const record = await stored(calls.chat);
    // Copies of a record 7 days back (past USAGE_RETENTION_DAYS=5) and 2 days back, billed as the writer bills.
    const copy = async (requestId: string, daysBack: number) => {
      await sql(
        `INSERT INTO usage_record (request_id, key_id, owner_id, model, interface, status, usage, cost_nano, started_at, duration_ms, price_sheet, price_basis)
         SELECT $2, key_id, owner_id, model, interface, status, usage, cost_nano, started_at - make_interval(days => $3), duration_ms, price_sheet, price_basis
           FROM usage_record WHERE request_id = $1`,
        [calls.chat, requestId, daysBack],
      );
      await sql(`UPDATE quota_owner SET spent_nano = spent_nano + $1 WHERE id = 'team-a'`, [record.cost_nano]);
    };
    await copy('verify-old', 7);
    await copy('verify-recent', 2);
    const count = await recordCount();

    const deleted = await gateway.app.get(UsageRetention).runOnce();
    const answer = await audited();
    const recent = await audited(
      `?from=${new Date(record.started_at.getTime() - 3 * DAY_MS).toISOString()}&to=${new Date(record.started_at.getTime() - DAY_MS).toISOString()}`,
    );

    expect(deleted).toBe(1);
    expect(await recordCount()).toBe(count - 1);
    expect(answer).toMatchObject({ records_checked: count - 1, owners_checked: 2, differences: [] });
    expect(recent).toMatchObject({ records_checked: 1, differences: [] });
  });
});
