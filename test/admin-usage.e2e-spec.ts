import { nanoToDecimal } from '../src/config/money';
import type { UsageRecordRow } from '../src/admin/usage-query';
import { UsageRetention } from '../src/metering/usage-retention.service';
import { GatewayHarness } from './support/gateway-harness';
import { Answer, httpCall } from './support/admin-kit';
import { KEYS, VENDOR_KEY } from './support/test-config';

/**
 * Usage storage through the admin API: the record listing and its filters and
 * cursor, the daily totals the database keeps on every insert, and retention, which deletes
 * old records but leaves the totals alone.
 */

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;

const dayOf = (time: number | Date): string => new Date(time).toISOString().slice(0, 10);
const iso = (time: number): string => new Date(time).toISOString();

type StoredRecord = UsageRecordRow;

/** Every stored record, newest first (the listing's order). */
async function storedRecords(gateway: GatewayHarness): Promise<StoredRecord[]> {
  await gateway.flushUsage();
  return gateway.dataSource.query(
    `SELECT request_id, client_request_id, key_id, owner_id, model, interface, line, translated_to, status, error_code, stream,
            usage, cost_nano::text AS cost_nano, started_at, duration_ms, upstream_headers_ms, tags, end_user, lines_tried, price_sheet, price_basis
       FROM usage_record ORDER BY started_at DESC, request_id DESC`,
  );
}

/** What the admin API should show for a stored record. */
function viewOf(record: StoredRecord) {
  const linesTried = record.lines_tried ?? (record.line === null ? [] : [record.line]);
  return {
    ...record,
    tags: record.tags ?? [],
    attempts: linesTried.length,
    lines_tried: linesTried,
    cost: Number(nanoToDecimal(BigInt(record.cost_nano))),
    started_at: new Date(record.started_at).toISOString(),
    written: true,
  };
}

interface DailyRow {
  day: string;
  model: string;
  owner?: string;
  calls: number;
  failed_calls: number;
  cost: number;
  cost_nano: string;
  usage: Record<string, number>;
}

const order = (row: DailyRow) => `${row.day}|${row.model}|${row.owner ?? ''}`;
const sorted = (rows: DailyRow[]) => [...rows].sort((a, b) => (order(a) < order(b) ? -1 : order(a) > order(b) ? 1 : 0));

/** The daily totals of `records`, summed here from the records themselves. */
function totalsOf(records: StoredRecord[], byOwner: boolean): DailyRow[] {
  const totals = new Map<string, DailyRow & { nano: bigint }>();
  for (const record of records) {
    const day = dayOf(new Date(record.started_at));
    const key = `${day}|${record.model}|${byOwner ? record.owner_id : ''}`;
    let total = totals.get(key);
    if (!total) {
      total = {
        day,
        model: record.model,
        ...(byOwner ? { owner: record.owner_id } : {}),
        calls: 0,
        failed_calls: 0,
        cost: 0,
        cost_nano: '0',
        usage: {},
        nano: 0n,
      };
      totals.set(key, total);
    }
    total.calls += 1;
    if (record.status >= 400) total.failed_calls += 1;
    total.nano += BigInt(record.cost_nano);
    for (const [figure, amount] of Object.entries(record.usage ?? {})) total.usage[figure] = (total.usage[figure] ?? 0) + Number(amount);
  }
  return sorted([...totals.values()].map(({ nano, ...total }) => ({ ...total, cost: Number(nanoToDecimal(nano)), cost_nano: nano.toString() })));
}

interface NewRecord {
  requestId: string;
  keyId: string;
  ownerId: string;
  startedAt: number;
  model?: string;
  status?: number;
  costNano?: bigint;
  usage?: Record<string, number> | null;
}

/** Inserts records straight into usage_record, in one statement (the trigger sees them together). */
async function insertRecords(gateway: GatewayHarness, records: NewRecord[]): Promise<void> {
  const values: unknown[] = [];
  const rows = records.map((record) => {
    values.push(
      record.requestId,
      record.keyId,
      record.ownerId,
      record.model ?? 'chat-model',
      record.status ?? 200,
      record.usage === null ? null : JSON.stringify(record.usage ?? { input_tokens: 10, output_tokens: 2 }),
      (record.costNano ?? 45_000n).toString(),
      iso(record.startedAt),
    );
    const at = values.length - 8;
    return `($${at + 1}, $${at + 2}::uuid, $${at + 3}, $${at + 4}, 'chat_completions', $${at + 5}, $${at + 6}::jsonb, $${at + 7}::bigint, $${at + 8}::timestamptz, 9)`;
  });
  await gateway.dataSource.query(
    `INSERT INTO usage_record (request_id, key_id, owner_id, model, interface, status, usage, cost_nano, started_at, duration_ms)
     VALUES ${rows.join(', ')}`,
    values,
  );
}

describe('admin API: usage records and daily totals', () => {
  let gateway: GatewayHarness;
  const admin = (path: string): Promise<Answer> => httpCall(gateway.url, 'GET', path);
  const ids = (answer: Answer): string[] => answer.body.data.map((record: { request_id: string }) => record.request_id);

  /** Request ids of the calls made in beforeAll. */
  const calls: Record<string, string> = {};
  const keys: Record<'wide' | 'chat' | 'solo', string> = { wide: '', chat: '', solo: '' };
  /** 12:00 UTC five days ago: the timed records sit around it. */
  const base = Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate()) - 5 * DAY_MS + 12 * HOUR_MS;

  async function post(name: string, key: string, path: string, body: unknown, status = 200): Promise<void> {
    const answer = await httpCall(gateway.url, 'POST', path, body, { authorization: `Bearer ${key}` });
    expect({ name, status: answer.status }).toEqual({ name, status });
    calls[name] = answer.headers.get('x-request-id') ?? '';
  }

  beforeAll(async () => {
    gateway = await GatewayHarness.start({ settings: { usageRetention: { days: 30, intervalMs: 0, batchSize: 2 } } });
    await httpCall(gateway.url, 'POST', '/admin/owners', { id: 'usage-team', kind: 'project', budget: 50 });
    await httpCall(gateway.url, 'POST', '/admin/owners', { id: 'usage-solo', kind: 'member' });
    const made = async (owner: string, models: string[]) => (await httpCall(gateway.url, 'POST', '/admin/keys', { owner, models })).body;
    const wide = await made('usage-team', ['*']);
    const chat = await made('usage-team', ['chat-model']);
    const solo = await made('usage-solo', ['*']);
    Object.assign(keys, { wide: wide.id, chat: chat.id, solo: solo.id });

    const chatBody = { model: 'chat-model', messages: [{ role: 'user', content: 'Count the receipts' }] };
    await post('wideChat1', wide.key, '/v1/chat/completions', chatBody);
    await post('wideChat2', wide.key, '/v1/chat/completions', chatBody);
    await post('wideResponses', wide.key, '/v1/responses', { model: 'chat-model', input: 'Count the invoices' });
    await post('wideMessages', wide.key, '/v1/messages', { model: 'messages-model', max_tokens: 64, messages: [{ role: 'user', content: 'Count' }] });
    await post('wideEmbed', wide.key, '/v1/embeddings', { model: 'embed-model', input: 'ledger' });
    await post('chatOk', chat.key, '/v1/chat/completions', chatBody);
    for (const status of [429, 400, 500]) {
      gateway.simulator.failNext('/v1/chat/completions', { status });
      await post(`chat${status}`, chat.key, '/v1/chat/completions', chatBody, status);
    }
    await post('soloChat', solo.key, '/v1/chat/completions', chatBody);
    await post('soloEmbed', solo.key, '/v1/embeddings', { model: 'embed-model', input: 'ledger' });
    await gateway.flushUsage();

    const timed = (requestId: string, startedAt: number, index: number): NewRecord => ({
      requestId,
      keyId: wide.id,
      ownerId: 'usage-team',
      startedAt,
      costNano: 1_000n * BigInt(index) + 1n,
      usage: { input_tokens: 10 * index, output_tokens: index },
    });
    await insertRecords(gateway, [timed('timed-1', base - 2 * HOUR_MS, 1), timed('timed-2', base - HOUR_MS, 2), timed('timed-3', base, 3)]);
    await insertRecords(gateway, [
      timed('timed-tie-a', base + HOUR_MS, 4),
      timed('timed-tie-b', base + HOUR_MS, 5),
      { ...timed('timed-tie-c', base + HOUR_MS, 6), status: 499, usage: null },
    ]);
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  describe('record listing', () => {
    it('lists the records of an owner newest first, each with its stored values', async () => {
      const stored = (await storedRecords(gateway)).filter((record) => record.owner_id === 'usage-team');

      const answer = await admin('/admin/usage?owner=usage-team');

      expect(answer.status).toBe(200);
      expect(stored).toHaveLength(15);
      expect(answer.body).toEqual({ data: stored.map(viewOf), next: null });
      expect(ids(answer)).toEqual(expect.arrayContaining(['wideChat1', 'wideMessages', 'chat429', 'chat500'].map((name) => calls[name])));
      const messages = answer.body.data.find((record: { request_id: string }) => record.request_id === calls.wideMessages);
      expect(messages).toMatchObject({ key_id: keys.wide, model: 'messages-model', interface: 'messages', status: 200, written: true });
      expect(BigInt(messages.cost_nano)).toBeGreaterThan(0n);
    });

    it('lists every record without filters', async () => {
      const stored = await storedRecords(gateway);

      expect(ids(await admin('/admin/usage?limit=1000'))).toEqual(stored.map((record) => record.request_id));
    });

    it('filters by key', async () => {
      const answer = await admin(`/admin/usage?key=${keys.chat}`);

      expect(ids(answer).sort()).toEqual(['chatOk', 'chat429', 'chat400', 'chat500'].map((name) => calls[name]).sort());
      expect(ids(answer)).toEqual((await storedRecords(gateway)).filter((record) => record.key_id === keys.chat).map((record) => record.request_id));
    });

    it('filters by model', async () => {
      expect(ids(await admin('/admin/usage?owner=usage-team&model=messages-model'))).toEqual([calls.wideMessages]);
      expect(ids(await admin('/admin/usage?owner=usage-solo&model=embed-model'))).toEqual([calls.soloEmbed]);
    });

    it('filters by the called interface', async () => {
      expect(ids(await admin('/admin/usage?owner=usage-team&interface=responses'))).toEqual([calls.wideResponses]);
      const embeddings = ids(await admin('/admin/usage?interface=embeddings'));
      expect(embeddings).toEqual(expect.arrayContaining([calls.wideEmbed, calls.soloEmbed]));
      expect(embeddings).toEqual((await storedRecords(gateway)).filter((record) => record.interface === 'embeddings').map((record) => record.request_id));
    });

    it('filters by an exact status and by a status class', async () => {
      expect(ids(await admin(`/admin/usage?key=${keys.chat}&status=429`))).toEqual([calls.chat429]);
      expect(ids(await admin(`/admin/usage?key=${keys.chat}&status=400`))).toEqual([calls.chat400]);
      expect(ids(await admin(`/admin/usage?key=${keys.chat}&status=4xx`))).toEqual([calls.chat400, calls.chat429]);
      expect(ids(await admin(`/admin/usage?key=${keys.chat}&status=5xx`))).toEqual([calls.chat500]);
      expect(ids(await admin(`/admin/usage?key=${keys.chat}&status=2xx`))).toEqual([calls.chatOk]);
      expect(ids(await admin('/admin/usage?owner=usage-solo&status=4xx'))).toEqual([]);
      expect(ids(await admin('/admin/usage?owner=usage-team&status=499'))).toEqual(['timed-tie-c']);
    });

    it('filters by start time: from included, to excluded, a date meaning midnight UTC', async () => {
      expect(ids(await admin(`/admin/usage?owner=usage-team&from=${iso(base - HOUR_MS)}&to=${iso(base + HOUR_MS)}`))).toEqual(['timed-3', 'timed-2']);
      expect(ids(await admin(`/admin/usage?owner=usage-team&from=${dayOf(base)}&to=${dayOf(base + DAY_MS)}`))).toEqual([
        'timed-tie-c',
        'timed-tie-b',
        'timed-tie-a',
        'timed-3',
        'timed-2',
        'timed-1',
      ]);
      const noonInParis = `${dayOf(base)}T13:00:00%2B01:00`;
      expect(ids(await admin(`/admin/usage?owner=usage-team&from=${noonInParis}&to=${dayOf(base + DAY_MS)}`))).toEqual([
        'timed-tie-c',
        'timed-tie-b',
        'timed-tie-a',
        'timed-3',
      ]);
      expect(ids(await admin(`/admin/usage?owner=usage-team&to=${dayOf(base)}`))).toEqual([]);
    });

    it('pages through the records with the next cursor until it is null, each record once, ties included', async () => {
      const expected = (await storedRecords(gateway)).filter((record) => record.owner_id === 'usage-team').map((record) => record.request_id);
      const seen: string[] = [];
      let after: string | null = null;
      let pages = 0;
      do {
        const answer: Answer = await admin(`/admin/usage?owner=usage-team&limit=2${after === null ? '' : `&after=${encodeURIComponent(after)}`}`);
        expect(answer.status).toBe(200);
        seen.push(...ids(answer));
        after = answer.body.next;
        pages++;
        if (after !== null) expect(answer.body.data).toHaveLength(2);
      } while (after !== null && pages < 100);

      expect(seen).toEqual(expected);
      expect(pages).toBe(Math.ceil(expected.length / 2));
    });

    it('keeps the filters on later pages', async () => {
      const first = await admin(`/admin/usage?owner=usage-team&from=${dayOf(base)}&to=${dayOf(base + DAY_MS)}&limit=2`);
      const second = await admin(
        `/admin/usage?owner=usage-team&from=${dayOf(base)}&to=${dayOf(base + DAY_MS)}&limit=2&after=${encodeURIComponent(first.body.next)}`,
      );
      const third = await admin(
        `/admin/usage?owner=usage-team&from=${dayOf(base)}&to=${dayOf(base + DAY_MS)}&limit=2&after=${encodeURIComponent(second.body.next)}`,
      );

      expect([ids(first), ids(second), ids(third)]).toEqual([
        ['timed-tie-c', 'timed-tie-b'],
        ['timed-tie-a', 'timed-3'],
        ['timed-2', 'timed-1'],
      ]);
      expect(third.body.next).toBeNull();
    });

    it('shows a record looked up by request id as the listing shows it', async () => {
      const listed = (await admin(`/admin/usage?key=${keys.chat}&status=429`)).body.data[0];

      expect((await admin(`/admin/usage/${calls.chat429}`)).body).toEqual(listed);
    });

    it.each([
      ['a status that is a word', 'status=abc', 'status'],
      ['a status of 600', 'status=600', 'status'],
      ['a status of two digits', 'status=42', 'status'],
      ['a half class', 'status=4x', 'status'],
      ['two statuses', 'status=429&status=500', 'status'],
      ['a key id that is not a UUID', 'key=gk-test', 'key'],
      ['a from in words', 'from=yesterday', 'from'],
      ['a to in month 13', 'to=2026-13-01', 'to'],
      ['a from on February 30', 'from=2026-02-30', 'from'],
      ['a from without zone', 'from=2026-01-01T10:00:00', 'from'],
      ['a to before from', 'from=2026-02-01&to=2026-01-01', 'to'],
      ['a limit over 1000', 'limit=1001', 'limit'],
      ['a limit of 0', 'limit=0', 'limit'],
      ['a cursor it never gave out', 'after=garbage', 'after'],
      ['a cursor with an impossible date', 'after=2026-02-30T00:00:00.000Z_x', 'after'],
      ['an empty owner', 'owner=', 'owner'],
      ['an unknown parameter', 'sort=asc', 'sort'],
    ])('refuses %s with 400 naming the field', async (_label, query, field) => {
      const answer = await admin(`/admin/usage?${query}`);

      expect({ status: answer.status, code: answer.body?.error?.code }).toEqual({ status: 400, code: null });
      expect(answer.body.error.message).toContain(field);
    });
  });

  describe('daily totals', () => {
    const range = () => `from=${dayOf(Date.now() - 10 * DAY_MS)}&to=${dayOf(Date.now() + DAY_MS)}`;

    it('equal the sums of the usage records per UTC day and model', async () => {
      const expected = totalsOf(await storedRecords(gateway), false);

      const answer = await admin(`/admin/usage/daily?${range()}`);

      expect(answer.status).toBe(200);
      expect(sorted(answer.body.data)).toEqual(expected);
      const days = answer.body.data.map((row: DailyRow) => row.day);
      expect(days).toEqual([...days].sort());
      expect(expected.map((row) => row.day)).toEqual(expect.arrayContaining([dayOf(base), dayOf(Date.now())]));
    });

    it('equal the sums per day, model and owner with group_by=owner', async () => {
      const expected = totalsOf(await storedRecords(gateway), true);

      const answer = await admin(`/admin/usage/daily?${range()}&group_by=owner`);

      expect(sorted(answer.body.data)).toEqual(expected);
      expect(expected.filter((row) => row.model === 'chat-model').map((row) => row.owner)).toEqual(expect.arrayContaining(['usage-team', 'usage-solo']));
    });

    it('filter by owner and by model', async () => {
      const stored = await storedRecords(gateway);

      const team = await admin(`/admin/usage/daily?${range()}&owner=usage-team`);
      const teamChat = await admin(`/admin/usage/daily?${range()}&owner=usage-team&model=chat-model&group_by=owner`);

      expect(sorted(team.body.data)).toEqual(
        totalsOf(
          stored.filter((record) => record.owner_id === 'usage-team'),
          false,
        ),
      );
      expect(sorted(teamChat.body.data)).toEqual(
        totalsOf(
          stored.filter((record) => record.owner_id === 'usage-team' && record.model === 'chat-model'),
          true,
        ),
      );
    });

    it('count calls answered with 400 or above as failed, and the cost exactly', async () => {
      const stored = await storedRecords(gateway);
      const names = ['wideChat1', 'wideChat2', 'wideResponses', 'chatOk', 'chat429', 'chat400', 'chat500'];
      const today = stored.filter((record) => names.some((name) => calls[name] === record.request_id));
      expect(today).toHaveLength(7);
      const days = today.map((record) => dayOf(new Date(record.started_at))).sort();

      const answer = await admin(`/admin/usage/daily?from=${days[0]}&to=${days[days.length - 1]}&owner=usage-team&model=chat-model`);

      const rows = answer.body.data as DailyRow[];
      expect(rows.reduce((sum, row) => sum + row.calls, 0)).toBe(7);
      expect(rows.reduce((sum, row) => sum + row.failed_calls, 0)).toBe(3);
      expect(rows.reduce((sum, row) => sum + BigInt(row.cost_nano), 0n)).toBe(today.reduce((sum, record) => sum + BigInt(record.cost_nano), 0n));
      expect(rows.reduce((sum, row) => sum + (row.usage.input_tokens ?? 0), 0)).toBe(today.reduce((sum, record) => sum + (record.usage?.input_tokens ?? 0), 0));
    });

    it("add a record inserted later to its day's existing totals, new figures included", async () => {
      const query = `/admin/usage/daily?from=${dayOf(base)}&to=${dayOf(base)}&owner=usage-team`;
      const [before] = (await admin(query)).body.data as DailyRow[];
      expect(before).toMatchObject({
        day: dayOf(base),
        model: 'chat-model',
        calls: 6,
        failed_calls: 1,
        cost_nano: '21006',
        usage: { input_tokens: 150, output_tokens: 15 },
      });

      await insertRecords(gateway, [
        {
          requestId: 'timed-late',
          keyId: keys.wide,
          ownerId: 'usage-team',
          startedAt: base + 2 * HOUR_MS,
          status: 503,
          costNano: 7n,
          usage: { input_tokens: 5, cached_input_tokens: 2 },
        },
      ]);

      expect((await admin(query)).body.data).toEqual([
        {
          day: dayOf(base),
          model: 'chat-model',
          calls: 7,
          failed_calls: 2,
          cost: 0.000021013,
          cost_nano: '21013',
          usage: { input_tokens: 155, output_tokens: 15, cached_input_tokens: 2 },
        },
      ]);
    });

    it('answer a range without records with no rows', async () => {
      expect(await admin('/admin/usage/daily?from=2001-01-01&to=2001-01-31')).toMatchObject({ status: 200, body: { data: [] } });
    });

    it.each([
      ['a missing from', 'to=2026-01-31', 'from'],
      ['a missing to', 'from=2026-01-01', 'to'],
      ['a from without leading zeros', 'from=2026-1-1&to=2026-01-31', 'from'],
      ['a from with a time', 'from=2026-01-01T00:00:00Z&to=2026-01-31', 'from'],
      ['a from on February 30', 'from=2026-02-30&to=2026-03-31', 'from'],
      ['a to in month 13', 'from=2026-01-01&to=2026-13-01', 'to'],
      ['a from in year 0', 'from=0000-01-01&to=0000-01-02', 'from'],
      ['a to before from', 'from=2026-01-31&to=2026-01-01', 'to'],
      ['a range over 366 days', 'from=2025-01-01&to=2026-01-02', 'to'],
      ['a group_by that is not model or owner', 'from=2026-01-01&to=2026-01-31&group_by=key', 'group_by'],
      ['two froms', 'from=2026-01-01&from=2026-01-02&to=2026-01-31', 'from'],
      ['an empty owner', 'from=2026-01-01&to=2026-01-31&owner=', 'owner'],
      ['an unknown parameter', 'from=2026-01-01&to=2026-01-31&limit=5', 'limit'],
    ])('refuse %s with 400 naming the field', async (_label, query, field) => {
      const answer = await admin(`/admin/usage/daily?${query}`);

      expect({ status: answer.status, code: answer.body?.error?.code }).toEqual({ status: 400, code: null });
      expect(answer.body.error.message).toContain(field);
    });

    it('accept a range of exactly 366 days', async () => {
      expect((await admin('/admin/usage/daily?from=2025-01-01&to=2026-01-01')).status).toBe(200);
    });
  });

  describe('retention', () => {
    it('deletes records older than the retention period in batches and leaves the daily totals as they were', async () => {
      const now = Date.now();
      await insertRecords(
        gateway,
        [1, 2, 3, 4, 5].map((index) => ({
          requestId: `old-${index}`,
          keyId: keys.wide,
          ownerId: index % 2 === 0 ? 'usage-solo' : 'usage-team',
          startedAt: now - 40 * DAY_MS + index * 60_000,
          status: index === 3 ? 429 : 200,
          costNano: 123_456_789n * BigInt(index),
          usage: { input_tokens: 100 * index, output_tokens: index },
        })),
      );
      await insertRecords(gateway, [{ requestId: 'aging-1', keyId: keys.wide, ownerId: 'usage-team', startedAt: now - 29 * DAY_MS }]);
      const storedBefore = await storedRecords(gateway);
      const range = `from=${dayOf(now - 45 * DAY_MS)}&to=${dayOf(now + DAY_MS)}`;
      const byModel = (await admin(`/admin/usage/daily?${range}`)).body.data;
      const byOwner = (await admin(`/admin/usage/daily?${range}&group_by=owner`)).body.data;
      expect(sorted(byOwner)).toEqual(totalsOf(storedBefore, true));
      expect(byModel.map((row: DailyRow) => row.day)).toContain(dayOf(now - 40 * DAY_MS + 60_000));

      const deleted = await gateway.app.get(UsageRetention).runOnce();

      expect(deleted).toBe(5);
      const storedAfter = await storedRecords(gateway);
      expect(storedAfter.map((record) => record.request_id)).toEqual(
        storedBefore.filter((record) => !record.request_id.startsWith('old-')).map((record) => record.request_id),
      );
      expect(storedAfter.map((record) => record.request_id)).toContain('aging-1');
      expect((await admin(`/admin/usage/daily?${range}`)).body.data).toEqual(byModel);
      expect((await admin(`/admin/usage/daily?${range}&group_by=owner`)).body.data).toEqual(byOwner);
      expect((await admin('/admin/usage/old-1')).status).toBe(404);
      expect(ids(await admin(`/admin/usage?to=${iso(now - 30 * DAY_MS)}`))).toEqual([]);
      expect(await gateway.app.get(UsageRetention).runOnce()).toBe(0);
    });

    it('deletes budget periods and delivered alerts that ended before the retention period, and nothing of a period still counting', async () => {
      const now = Date.now();
      const ago = (days: number) => new Date(now - days * DAY_MS);
      await gateway.dataSource.query(
        `INSERT INTO budget_spend (owner_id, key_id, period_start, spent_nano) VALUES
           ('usage-team', '', $1, 1), ('usage-team', '', $2, 2), ('usage-team', 'a-key-for-good', '-infinity', 3)`,
        [ago(70), ago(40)],
      );
      await gateway.dataSource.query(
        `INSERT INTO budget_alert (id, owner_id, period_start, period_end, threshold, budget_nano, used_nano, fired_at, next_attempt_at, delivered_at) VALUES
           (gen_random_uuid(), 'usage-team', $1, $2, 50, 10, 5, $1, $1, $1),
           (gen_random_uuid(), 'usage-team', $2, $3, 50, 10, 5, $2, $2, $2),
           (gen_random_uuid(), 'usage-team', '-infinity', NULL, 80, 10, 8, $1, $1, $1),
           (gen_random_uuid(), 'usage-team', $1, $2, 100, 10, 10, $1, $1, NULL)`,
        [ago(70), ago(35), ago(5)],
      );

      await gateway.app.get(UsageRetention).runOnce();

      const periods = await gateway.dataSource.query(
        `SELECT spent_nano::int AS spent FROM budget_spend WHERE owner_id = 'usage-team' AND spent_nano < 4 ORDER BY spent_nano`,
      );
      const alerts = await gateway.dataSource.query(`SELECT threshold FROM budget_alert WHERE owner_id = 'usage-team' ORDER BY threshold`);
      expect(periods.map((row: { spent: number }) => row.spent)).toEqual([2, 3]);
      // The alert of the period that ended 35 days ago and was delivered goes; the running period's, the lifetime's and the undelivered stay.
      expect(alerts.map((row: { threshold: number }) => row.threshold)).toEqual([50, 80, 100]);
    });
  });

  describe('calls per minute', () => {
    it('counts the calls, failed calls and cost of each recent minute of an owner, oldest first, leaving out minutes without calls', async () => {
      const thisMinute = Math.floor(Date.now() / 60_000) * 60_000;
      await insertRecords(gateway, [
        { requestId: 'minute-1', keyId: keys.solo, ownerId: 'minute-team', startedAt: thisMinute - 5 * 60_000 + 1_000, costNano: 10n },
        { requestId: 'minute-2', keyId: keys.solo, ownerId: 'minute-team', startedAt: thisMinute - 5 * 60_000 + 59_000, status: 502, costNano: 0n },
        { requestId: 'minute-3', keyId: keys.solo, ownerId: 'minute-team', startedAt: thisMinute + 10, costNano: 7n },
        { requestId: 'minute-old', keyId: keys.solo, ownerId: 'minute-team', startedAt: thisMinute - 20 * 60_000, costNano: 1n },
      ]);

      const answer = await admin('/admin/usage/minutes?minutes=10&owner=minute-team');

      expect(answer.status).toBe(200);
      expect(answer.body.data).toEqual([
        { minute: iso(thisMinute - 5 * 60_000), calls: 2, failed_calls: 1, cost: 0.00000001, cost_nano: '10' },
        { minute: iso(thisMinute), calls: 1, failed_calls: 0, cost: 0.000000007, cost_nano: '7' },
      ]);
      expect((await admin('/admin/usage/minutes?minutes=30&owner=minute-team')).body.data).toHaveLength(3);
    });

    it('refuses a window over a day with 400 naming the field', async () => {
      const answer = await admin('/admin/usage/minutes?minutes=1441');

      expect([answer.status, answer.body.error.message]).toEqual([400, expect.stringMatching(/^minutes: /)]);
    });
  });

  describe('lines', () => {
    it('lists every line of the catalog with its calls in flight, its limit and whether it is cooling, never its key', async () => {
      const dead = await httpCall(
        gateway.url,
        'POST',
        '/v1/chat/completions',
        { model: 'dead-model', messages: [{ role: 'user', content: 'hi' }] },
        { authorization: `Bearer ${KEYS.all}` },
      );
      expect(dead.status).toBe(502);

      const answer = await admin('/admin/lines');

      expect(answer.status).toBe(200);
      expect(answer.body.data.map((line: { id: string }) => line.id)).toEqual(['line-a', 'line-b', 'line-dead', 'line-narrow']);
      expect(answer.body.data).toContainEqual({
        id: 'line-narrow',
        base_url: gateway.simulatorUrl,
        in_flight: 0,
        max_concurrency: 1,
        cooling: false,
        cooling_until: null,
        rate_limited_until: null,
      });
      expect(answer.body.data).toContainEqual(
        expect.objectContaining({ id: 'line-dead', cooling: true, cooling_until: expect.stringMatching(/Z$/), max_concurrency: null }),
      );
      expect(answer.text).not.toContain(VENDOR_KEY);
    });
  });
});
