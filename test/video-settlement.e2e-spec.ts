import { Clock } from '../src/common/clock';
import { VideoReconciler } from '../src/video/video-reconciler';
import type { VideoSettings } from '../src/config/settings/video.settings';
import { pricingOf, type PricingSpec } from '../src/config/catalog-spec';
import { type PriceBasis, recordCostOf } from '../src/metering/pricing';
import { ADMIN_TOKEN_FOR_TESTS, GatewayHarness } from './support/gateway-harness';
import { call, ownerMoney, taskRow, VENDOR_B, VENDOR_C, VIDEO_KEYS, VIDEO_TEST_SETTINGS, videoConfigYaml } from './support/video-kit';

/**
 * Settlement of video tasks (SPEC.md "Video tasks", "States and transitions", Limits "Metering
 * and billing"): tasks are followed in the background without client polling, billed once
 * when they end (by reported usage, else estimated from duration and resolution; failed,
 * cancelled and expired not billed), charged their reservation when still open 8 days after
 * submission, and recorded under the submit's X-Request-Id, across replicas and restarts.
 */

// ---------------------------------------------------------------- prices and expected costs

/** videoConfigYaml's prices restated in nano-units, so every expected cost is computed here. */
const PRICES = {
  videoC: {
    outputSecond: 50_000_000n, // 0.05 per second
    outputSecond1080p: 100_000_000n, // 1080p tier: 0.1
    outputSecond1080pVideoInput: 150_000_000n, // 1080p with video input tier: 0.15
    inputSecond: 20_000_000n, // 0.02
    inputImage: 10_000_000n, // 0.01
  },
  videoB: {
    perMillionTokens: 2_000_000_000n, // 2 per 1M output video tokens
    perMillionTokens1080p: 3_000_000_000n, // 1080p tier: 3
    perMillionTokens480p: 1_000_000_000n, // 480p tier: 1
  },
};

const DAY_MS = 24 * 60 * 60 * 1000;
const OWNER = 'team-a';
const KEY = VIDEO_KEYS.teamA1;

/** Tokens priced per 1M, rounded half up to whole nano-units. */
function tokenCost(tokens: number, perMillion: bigint): bigint {
  return (BigInt(tokens) * perMillion + 500_000n) / 1_000_000n;
}

/** Vendor-b's token count of a 16:9 video at 24 frames per second. */
function vendorBTokens(height: number, seconds: number): number {
  const width = Math.round((height * 16) / 9);
  return Math.round((width * height * 24 * seconds) / 1024);
}

// ---------------------------------------------------------------- submit bodies

/** Vendor-c, 1080p, 6 s, with a 4 s reference video and one image: the 0.15/s tier. */
const C_WITH_VIDEO = {
  model: 'video-c',
  duration: 6,
  resolution: '1080p',
  content: [
    { type: 'text', text: 'a lighthouse at dusk, waves rolling in' },
    { type: 'video_url', video_url: { url: 'https://media.example.com/waves.mp4', duration: 4 } },
    { type: 'image_url', image_url: { url: 'https://media.example.com/lighthouse.png' } },
  ],
};
/** Reserved for C_WITH_VIDEO: 6 output s, 6 input video s (estimated as long as the output), 1 image. */
const C_WITH_VIDEO_RESERVED = 6n * PRICES.videoC.outputSecond1080pVideoInput + 6n * PRICES.videoC.inputSecond + 1n * PRICES.videoC.inputImage;

/** Vendor-c, 720p (no tier), text only. */
function cTextBody(duration: number): Record<string, unknown> {
  return { model: 'video-c', duration, resolution: '720p', content: [{ type: 'text', text: `a paper boat, ${duration} seconds` }] };
}
function cTextCost(outputSeconds: number): bigint {
  return BigInt(outputSeconds) * PRICES.videoC.outputSecond;
}

/** Vendor-b, text only. */
function bBody(resolution: string, duration: number): Record<string, unknown> {
  return { model: 'video-b', duration, resolution, content: [{ type: 'text', text: 'a red kite over green hills' }] };
}

// ---------------------------------------------------------------- helpers

type Vendor = typeof VENDOR_B | typeof VENDOR_C;

interface Submitted {
  /** The gateway's task id. */
  taskId: string;
  /** X-Request-Id of the submit: the request id of the settled usage record. */
  requestId: string;
  /** The simulator's id of the task. */
  upstreamId: string;
}

function startGateway(options: { sharing?: GatewayHarness; video?: Partial<VideoSettings> } = {}): Promise<GatewayHarness> {
  return GatewayHarness.start({
    configYaml: videoConfigYaml,
    settings: { video: { ...VIDEO_TEST_SETTINGS, ...options.video } },
    ...(options.sharing ? { sharing: options.sharing } : {}),
  });
}

/** A clock that stands still until the test moves it; one per gateway app. */
interface TestClock {
  now(): number;
  set(at: number): void;
  advance(ms: number): void;
}

function controlClock(gateway: GatewayHarness, start: number): TestClock {
  let now = start;
  jest.spyOn(gateway.app.get(Clock), 'now').mockImplementation(() => now);
  return {
    now: () => now,
    set: (at) => (now = at),
    advance: (ms) => (now += ms),
  };
}

/** Several gateways' clocks moved together, as replicas sharing one wall clock. */
function controlClocks(gateways: GatewayHarness[], start: number): TestClock {
  const clocks = gateways.map((gateway) => controlClock(gateway, start));
  return {
    now: () => clocks[0]!.now(),
    set: (at) => clocks.forEach((clock) => clock.set(at)),
    advance: (ms) => clocks.forEach((clock) => clock.advance(ms)),
  };
}

async function submit(gateway: GatewayHarness, vendor: Vendor, body: unknown, key: string = KEY): Promise<Submitted> {
  const answer = await call(gateway, 'POST', vendor.submit, key, body);
  expect(answer.status).toBe(200);
  const taskId: string = vendor === VENDOR_C ? answer.body.task_id : answer.body.id;
  const requestId = answer.headers.get('x-request-id') ?? '';
  expect(taskId).toEqual(expect.any(String));
  expect(requestId).not.toBe('');
  const row = await taskRow(gateway, taskId);
  return { taskId, requestId, upstreamId: row.upstream_task_id };
}

function round(gateway: GatewayHarness): Promise<number> {
  return gateway.app.get(VideoReconciler).runOnce();
}

function upstreamTask(gateway: GatewayHarness, task: Submitted) {
  const found = gateway.simulator.video.get(task.upstreamId);
  if (!found) throw new Error(`the simulator has no task ${task.upstreamId}`);
  return found;
}

async function adminUsage(gateway: GatewayHarness, requestId: string): Promise<{ status: number; body: any }> {
  const response = await fetch(`${gateway.url}/admin/usage/${encodeURIComponent(requestId)}`, {
    headers: { authorization: `Bearer ${ADMIN_TOKEN_FOR_TESTS}` },
  });
  return { status: response.status, body: await response.json() };
}

function timeOf(value: Date | string): number {
  return new Date(value).getTime();
}

/** Moves the clock to the task's next poll time, so the next round finds it due. */
async function untilDue(gateway: GatewayHarness, clock: TestClock, task: Submitted): Promise<void> {
  clock.set(Math.max(clock.now(), timeOf((await taskRow(gateway, task.taskId)).next_poll_at)));
}

/** The billed end of a task: its row, its usage record (also through the admin API) and its owner's money. */
async function expectSettled(
  gateway: GatewayHarness,
  task: Submitted,
  expected: { settlement: string; costNano: bigint; interface: string; usage?: Record<string, number> | null; errorCode?: string | null },
): Promise<void> {
  const row = await taskRow(gateway, task.taskId);
  expect(row.settled_at).not.toBeNull();
  expect(row.settlement).toBe(expected.settlement);
  expect(BigInt(row.cost_nano)).toBe(expected.costNano);

  const record = await gateway.usageRecord(task.requestId);
  expect(record).not.toBeNull();
  expect(record!.costNano).toBe(expected.costNano);
  expect(record!).toMatchObject({ interface: expected.interface, ownerId: OWNER, errorCode: expected.errorCode ?? null });
  if (expected.usage !== undefined) expect(record!.usage).toEqual(expected.usage);

  // The record keeps the prices it was billed at (the submit's) and its resolution and video input: its cost follows from them.
  const [kept] = (await gateway.dataSource.query(
    'SELECT r.price_sheet, r.price_basis, s.pricing FROM usage_record r LEFT JOIN price_sheet s ON s.id = r.price_sheet WHERE r.request_id = $1',
    [task.requestId],
  )) as Array<{ price_sheet: string | null; price_basis: PriceBasis | null; pricing: PricingSpec | null }>;
  if (expected.settlement === 'usage' || expected.settlement === 'estimated') {
    expect(kept.pricing).not.toBeNull();
    expect(kept.price_basis).toEqual(expect.objectContaining({ video_input: expect.any(Boolean) }));
    expect(recordCostOf(record!.usage ?? undefined, pricingOf(kept.pricing!), kept.price_basis)).toBe(expected.costNano);
  } else {
    expect(kept).toEqual({ price_sheet: null, price_basis: null, pricing: null });
  }

  const lookup = await adminUsage(gateway, task.requestId);
  expect(lookup.status).toBe(200);
  expect(lookup.body).toMatchObject({
    request_id: task.requestId,
    interface: expected.interface,
    owner_id: OWNER,
    cost_nano: expected.costNano.toString(),
    error_code: expected.errorCode ?? null,
  });
}

/** A gateway booted once for the describe this is called in, nested describes included: a boot is most of a test's time. */
function bootOnce(): () => GatewayHarness {
  let gateway: GatewayHarness;
  beforeAll(async () => {
    gateway = await startGateway();
  });
  afterAll(() => gateway.stop());
  return () => gateway;
}

/** Ids of the tasks not settled yet: the ones a round can still claim. */
async function openTaskIds(gateway: GatewayHarness): Promise<string[]> {
  const rows: Array<{ id: string }> = await gateway.dataSource.query('SELECT id FROM video_task WHERE settled_at IS NULL');
  return rows.map((row) => row.id);
}

/** Settles every open task by the 8-day charge (or releases a lost submit), so no later round claims it. */
async function endOpenTasks(gateway: GatewayHarness, clock: TestClock): Promise<void> {
  const open: Array<{ submitted_at: Date; next_poll_at: Date }> = await gateway.dataSource.query(
    'SELECT submitted_at, next_poll_at FROM video_task WHERE settled_at IS NULL',
  );
  if (open.length === 0) return;
  clock.set(Math.max(clock.now(), ...open.map((row) => Math.max(timeOf(row.submitted_at) + 8 * DAY_MS + 1_000, timeOf(row.next_poll_at)))));
  await round(gateway);
}

/**
 * A gateway shared by the tests, each with its own clock from now on and a fresh simulator.
 * Each test starts with no task open, and what it leaves open is ended after it, so its rounds
 * claim only its own tasks; money is compared with what the test reads at its start.
 */
function withGateway(shared: () => GatewayHarness): { gateway: () => GatewayHarness; clock: () => TestClock } {
  let clock: TestClock;
  beforeEach(async () => {
    clock = controlClock(shared(), Date.now());
    shared().simulator.reset();
    expect(await openTaskIds(shared())).toEqual([]);
  });
  afterEach(async () => {
    await endOpenTasks(shared(), clock);
    jest.restoreAllMocks();
  });
  return { gateway: shared, clock: () => clock };
}

// ---------------------------------------------------------------- suites

describe('video task settlement', () => {
  // The describes with the default settings and no change to the catalog share this gateway.
  const shared = bootOnce();

  // Rule: a finished task is settled by the background reconciler alone, billed from the usage
  // the upstream reports, at the tier its resolution and video input select.
  describe('without any client polling, a succeeded task with usage', () => {
    const { gateway, clock } = withGateway(shared);

    it('is billed by a reconciler round from vendor-c usage seconds and images at the 1080p video-input tier', async () => {
      const before = await ownerMoney(gateway(), OWNER);
      const task = await submit(gateway(), VENDOR_C, C_WITH_VIDEO);
      expect((await ownerMoney(gateway(), OWNER)).reserved).toBe(before.reserved + C_WITH_VIDEO_RESERVED);

      const usage = { output_seconds: 5, input_seconds: 4, input_image_count: 1 };
      gateway().simulator.video.succeed(task.upstreamId, usage);
      await untilDue(gateway(), clock(), task);
      expect(await round(gateway())).toBe(1);

      const cost = 5n * PRICES.videoC.outputSecond1080pVideoInput + 4n * PRICES.videoC.inputSecond + 1n * PRICES.videoC.inputImage;
      expect(cost).toBe(840_000_000n);
      await expectSettled(gateway(), task, { settlement: 'usage', costNano: cost, interface: 'video_c', usage, errorCode: null });
      expect(await ownerMoney(gateway(), OWNER)).toEqual({ spent: before.spent + cost, reserved: before.reserved });
      expect((await taskRow(gateway(), task.taskId)).status).toBe('succeeded');
      expect(upstreamTask(gateway(), task).queries).toBe(1);
    });

    it('is billed by a reconciler round from vendor-b completion_tokens as output video tokens at the 1080p tier', async () => {
      const before = await ownerMoney(gateway(), OWNER);
      const task = await submit(gateway(), VENDOR_B, bBody('1080p', 5));
      const reserved = tokenCost(vendorBTokens(1080, 5), PRICES.videoB.perMillionTokens1080p);
      expect((await ownerMoney(gateway(), OWNER)).reserved).toBe(before.reserved + reserved);

      gateway().simulator.video.succeed(task.upstreamId, { completion_tokens: 246_013, total_tokens: 246_013 });
      await untilDue(gateway(), clock(), task);
      expect(await round(gateway())).toBe(1);

      const cost = tokenCost(246_013, PRICES.videoB.perMillionTokens1080p);
      expect(cost).toBe(738_039_000n);
      await expectSettled(gateway(), task, {
        settlement: 'usage',
        costNano: cost,
        interface: 'video_b',
        usage: { output_video_tokens: 246_013 },
        errorCode: null,
      });
      expect(await ownerMoney(gateway(), OWNER)).toEqual({ spent: before.spent + cost, reserved: before.reserved });
    });
  });

  // Rule (docs/operations.md "Catalog: lines and models"): a task is priced with its model's
  // prices at its submit, whatever the catalog says when it settles.
  describe('a task whose model prices change while it renders', () => {
    // Its own gateway: the test reprices video-c, which every other test bills at the configured prices.
    const { gateway, clock } = withGateway(bootOnce());

    it('is billed at the prices of its submit, tiers included', async () => {
      const before = await ownerMoney(gateway(), OWNER);
      const task = await submit(gateway(), VENDOR_C, C_WITH_VIDEO);
      const admin = { authorization: `Bearer ${ADMIN_TOKEN_FOR_TESTS}`, 'content-type': 'application/json' };
      const read = (await (await fetch(`${gateway().url}/admin/models/video-c`, { headers: admin })).json()) as { version: number };
      const repriced = await fetch(`${gateway().url}/admin/models/video-c`, {
        method: 'PATCH',
        headers: admin,
        body: JSON.stringify({ version: read.version, prices: { output_seconds: 5, input_seconds: 5, input_image_count: 5 }, price_tiers: [] }),
      });
      expect(repriced.status).toBe(200);

      const usage = { output_seconds: 5, input_seconds: 4, input_image_count: 1 };
      gateway().simulator.video.succeed(task.upstreamId, usage);
      await untilDue(gateway(), clock(), task);
      expect(await round(gateway())).toBe(1);

      const cost = 5n * PRICES.videoC.outputSecond1080pVideoInput + 4n * PRICES.videoC.inputSecond + 1n * PRICES.videoC.inputImage;
      await expectSettled(gateway(), task, { settlement: 'usage', costNano: cost, interface: 'video_c', usage, errorCode: null });
      expect(await ownerMoney(gateway(), OWNER)).toEqual({ spent: before.spent + cost, reserved: before.reserved });
    });
  });

  // Rule: success without reported usage is estimated from duration and resolution.
  describe('a succeeded task that reports no usage', () => {
    const { gateway, clock } = withGateway(shared);

    it('is billed on vendor-c as duration seconds at the resolution tier price', async () => {
      const before = await ownerMoney(gateway(), OWNER);
      const task = await submit(gateway(), VENDOR_C, {
        model: 'video-c',
        duration: 6,
        resolution: '1080p',
        content: [{ type: 'text', text: 'a lighthouse at dusk' }],
      });

      gateway().simulator.video.succeed(task.upstreamId, null);
      await untilDue(gateway(), clock(), task);
      await round(gateway());

      const cost = 6n * PRICES.videoC.outputSecond1080p;
      await expectSettled(gateway(), task, { settlement: 'estimated', costNano: cost, interface: 'video_c', errorCode: null });
      expect(await ownerMoney(gateway(), OWNER)).toEqual({ spent: before.spent + cost, reserved: before.reserved });
    });

    it('is billed on vendor-b as the tokens of a 16:9 24 fps video of that duration and resolution', async () => {
      const before = await ownerMoney(gateway(), OWNER);
      const task = await submit(gateway(), VENDOR_B, bBody('480p', 3));

      gateway().simulator.video.succeed(task.upstreamId, null);
      await untilDue(gateway(), clock(), task);
      await round(gateway());

      // 480p: W = round(480 * 16 / 9) = 853; 853 * 480 * 24 * 3 / 1024 = 28788.75 -> 28789 tokens.
      const tokens = vendorBTokens(480, 3);
      expect(tokens).toBe(28_789);
      const cost = tokenCost(tokens, PRICES.videoB.perMillionTokens480p);
      await expectSettled(gateway(), task, {
        settlement: 'estimated',
        costNano: cost,
        interface: 'video_b',
        usage: { output_video_tokens: tokens },
        errorCode: null,
      });
      expect(await ownerMoney(gateway(), OWNER)).toEqual({ spent: before.spent + cost, reserved: before.reserved });
    });
  });

  // Rule: failed, cancelled and expired tasks are not billed; their reservation comes back and
  // the call is still recorded (cost 0, error code task_<status>).
  describe('a task that ends without success', () => {
    const { gateway, clock } = withGateway(shared);

    it.each([
      ['failed', 'vendor-c'],
      ['cancelled', 'vendor-c'],
      ['expired', 'vendor-c'],
      ['failed', 'vendor-b'],
      ['expired', 'vendor-b'],
    ] as const)('is not billed when the upstream reports it %s (%s)', async (status, vendorName) => {
      const vendor = vendorName === 'vendor-c' ? VENDOR_C : VENDOR_B;
      const before = await ownerMoney(gateway(), OWNER);
      const task = await submit(gateway(), vendor, vendor === VENDOR_C ? C_WITH_VIDEO : bBody('1080p', 5));
      expect((await ownerMoney(gateway(), OWNER)).reserved).toBeGreaterThan(before.reserved);

      gateway().simulator.video.setStatus(task.upstreamId, status);
      await untilDue(gateway(), clock(), task);
      expect(await round(gateway())).toBe(1);

      await expectSettled(gateway(), task, {
        settlement: 'not_billed',
        costNano: 0n,
        interface: vendor === VENDOR_C ? 'video_c' : 'video_b',
        usage: null,
        errorCode: `task_${status}`,
      });
      expect((await taskRow(gateway(), task.taskId)).status).toBe(status);
      expect(await ownerMoney(gateway(), OWNER)).toEqual(before);
    });
  });

  // Rule: spend is the sum of the records. A task whose submit request id has a record already
  // (no path of the gateway writes one for a confirmed task) is settled with that record left as
  // it is and none of its cost added, as the usage writer does for a record it skips.
  describe('a task whose submit request id has a usage record already', () => {
    const { gateway, clock } = withGateway(shared);

    it('is settled and its reservation released, the record standing and the spend unchanged', async () => {
      const before = await ownerMoney(gateway(), OWNER);
      const task = await submit(gateway(), VENDOR_C, cTextBody(5));
      const row = await taskRow(gateway(), task.taskId);
      await gateway().dataSource.query(
        `INSERT INTO usage_record (request_id, key_id, owner_id, model, interface, status, error_code, stream, cost_nano, started_at, duration_ms)
         VALUES ($1, $2, $3, 'video-c', 'video_c', 502, 'upstream_failed', false, 0, $4, 1)`,
        [task.requestId, row.key_id, OWNER, new Date(clock().now())],
      );

      gateway().simulator.video.succeed(task.upstreamId, { output_seconds: 5 });
      await untilDue(gateway(), clock(), task);
      expect(await round(gateway())).toBe(1);

      const settled = await taskRow(gateway(), task.taskId);
      expect(settled.settled_at).not.toBeNull();
      expect(BigInt(settled.cost_nano)).toBe(cTextCost(5));
      expect(await gateway().usageRecord(task.requestId)).toMatchObject({ status: 502, errorCode: 'upstream_failed', costNano: 0n });
      expect(await ownerMoney(gateway(), OWNER)).toEqual(before);
    });
  });

  // Rule: tasks are polled with back-off: the first look after the first delay, then each wait
  // twice the last, capped at 8 s; a task is not polled before it is due.
  describe('polling back-off', () => {
    const { gateway, clock } = withGateway(shared);

    it('polls a queued task once per due round, with doubling delays capped at 8 s', async () => {
      const before = await ownerMoney(gateway(), OWNER);
      const submittedAt = clock().now();
      const task = await submit(gateway(), VENDOR_C, cTextBody(5));
      const row = await taskRow(gateway(), task.taskId);
      expect(timeOf(row.next_poll_at) - submittedAt).toBe(VIDEO_TEST_SETTINGS.firstPollDelayMs);

      // Not yet due: nothing is claimed and the upstream is not asked.
      expect(await round(gateway())).toBe(0);
      clock().set(timeOf(row.next_poll_at) - 1);
      expect(await round(gateway())).toBe(0);
      expect(upstreamTask(gateway(), task).queries).toBe(0);

      const delays: number[] = [];
      for (let poll = 1; poll <= 5; poll += 1) {
        await untilDue(gateway(), clock(), task);
        expect(await round(gateway())).toBe(1);
        expect(upstreamTask(gateway(), task).queries).toBe(poll);

        // An immediate second round finds nothing due and does not ask again.
        expect(await round(gateway())).toBe(0);
        expect(upstreamTask(gateway(), task).queries).toBe(poll);

        const after = await taskRow(gateway(), task.taskId);
        expect(after).toMatchObject({ status: 'queued', polls: poll, poll_failures: 0, settled_at: null });
        delays.push(timeOf(after.next_poll_at) - clock().now());
      }
      expect(delays).toEqual([2_000, 4_000, 8_000, 8_000, 8_000]);
      expect((await ownerMoney(gateway(), OWNER)).spent).toBe(before.spent);
    });
  });

  // Rule: a task is settled exactly once however many replicas follow it: claims are exclusive
  // (each task asked upstream once) and the money moves once.
  describe('two replicas on one database', () => {
    let first: GatewayHarness;
    let second: GatewayHarness;

    beforeEach(async () => {
      first = await startGateway();
      second = await startGateway({ sharing: first });
    });
    afterEach(async () => {
      jest.restoreAllMocks();
      await second.stop();
      await first.stop();
    });

    it('settle every task exactly once when their rounds run concurrently', async () => {
      const clock = controlClocks([first, second], Date.now());
      const before = await ownerMoney(first, OWNER);
      const tasks: Array<Submitted & { cost: bigint }> = [];
      for (let index = 0; index < 10; index += 1) {
        const gateway = index % 2 === 0 ? first : second;
        const key = index % 3 === 0 ? VIDEO_KEYS.teamA2 : VIDEO_KEYS.teamA1;
        if (index % 4 === 3) {
          const tokens = 100_000 + index * 1_111;
          const task = await submit(gateway, VENDOR_B, bBody('720p', 4), key);
          first.simulator.video.succeed(task.upstreamId, { completion_tokens: tokens, total_tokens: tokens });
          tasks.push({ ...task, cost: tokenCost(tokens, PRICES.videoB.perMillionTokens) });
        } else {
          const seconds = 2 + index;
          const task = await submit(gateway, VENDOR_C, cTextBody(seconds), key);
          first.simulator.video.succeed(task.upstreamId, { output_seconds: seconds, input_seconds: 0, input_image_count: 0 });
          tasks.push({ ...task, cost: cTextCost(seconds) });
        }
      }
      expect(new Set(tasks.map((task) => task.upstreamId)).size).toBe(10);

      let claimed = 0;
      for (let pass = 0; pass < 4; pass += 1) {
        clock.advance(VIDEO_TEST_SETTINGS.maxPollDelayMs);
        const counts = await Promise.all([round(first), round(second)]);
        claimed += counts[0] + counts[1];
      }

      expect(claimed).toBe(10);
      for (const task of tasks) {
        expect(upstreamTask(first, task).queries).toBe(1);
        const row = await taskRow(first, task.taskId);
        expect(row).toMatchObject({ settlement: 'usage' });
        expect(BigInt(row.cost_nano)).toBe(task.cost);
        const record = await first.usageRecord(task.requestId);
        expect(record?.costNano).toBe(task.cost);
      }
      const requestIds = tasks.map((task) => task.requestId);
      const records = (await first.usageRecords()).filter((record) => requestIds.includes(record.requestId));
      expect(records.map((record) => record.requestId).sort()).toEqual([...requestIds].sort());
      const total = tasks.reduce((sum, task) => sum + task.cost, 0n);
      expect(await ownerMoney(first, OWNER)).toEqual({ spent: before.spent + total, reserved: 0n });
    });
  });

  // Rule: following a task survives a restart: a task submitted on a gateway that then stops is
  // settled by another gateway on the same database, under the original submit's request id.
  describe('a restart in the middle of a task', () => {
    let owner: GatewayHarness;

    beforeEach(async () => {
      owner = await startGateway();
    });
    afterEach(async () => {
      jest.restoreAllMocks();
      await owner.stop();
    });

    it('leaves the task to the gateway that starts next, which settles it under the first submit request id', async () => {
      const start = Date.now();
      const before = await ownerMoney(owner, OWNER);
      const a = await startGateway({ sharing: owner });
      const clockA = controlClock(a, start);
      const task = await submit(a, VENDOR_C, C_WITH_VIDEO);
      clockA.advance(VIDEO_TEST_SETTINGS.firstPollDelayMs);
      expect(await round(a)).toBe(1); // still queued: polled, not settled
      await a.stop();

      expect((await taskRow(owner, task.taskId)).settled_at).toBeNull();
      expect(await ownerMoney(owner, OWNER)).toEqual({ spent: before.spent, reserved: before.reserved + C_WITH_VIDEO_RESERVED });

      const b = await startGateway({ sharing: owner });
      try {
        const clockB = controlClock(b, clockA.now());
        const usage = { output_seconds: 6, input_seconds: 4, input_image_count: 1 };
        b.simulator.video.succeed(task.upstreamId, usage);
        await untilDue(b, clockB, task);
        expect(await round(b)).toBe(1);

        const cost = 6n * PRICES.videoC.outputSecond1080pVideoInput + 4n * PRICES.videoC.inputSecond + 1n * PRICES.videoC.inputImage;
        await expectSettled(b, task, { settlement: 'usage', costNano: cost, interface: 'video_c', usage, errorCode: null });
        expect(await ownerMoney(b, OWNER)).toEqual({ spent: before.spent + cost, reserved: before.reserved });
      } finally {
        await b.stop();
      }
    });
  });

  // Rule: a task that cannot be followed keeps its reservation, and 8 days after submission is
  // charged exactly its reserved amount (SPEC.md Limits "Unsettled video task charge").
  describe('a task whose upstream query keeps failing', () => {
    const { gateway, clock } = withGateway(shared);

    it.each([
      ['an HTTP 500', { status: 500 }, 'HTTP 500'],
      ['a connection reset', { kind: 'reset-before-headers' as const }, undefined],
    ])('stays open on %s and is charged its reservation 8 days after submission', async (_name, failure, lastError) => {
      const before = await ownerMoney(gateway(), OWNER);
      const submittedAt = clock().now();
      const task = await submit(gateway(), VENDOR_C, C_WITH_VIDEO);
      gateway().simulator.failNext(`/v2/query/video_generation/${task.upstreamId}`, failure, 1_000);

      for (let poll = 1; poll <= 4; poll += 1) {
        await untilDue(gateway(), clock(), task);
        expect(await round(gateway())).toBe(1);
      }
      // A day short of the charge, and seconds short of it: still open.
      clock().set(submittedAt + 7 * DAY_MS);
      expect(await round(gateway())).toBe(1);
      clock().set(submittedAt + 8 * DAY_MS - 10_000);
      expect(await round(gateway())).toBe(1);

      const open = await taskRow(gateway(), task.taskId);
      expect(open).toMatchObject({ settled_at: null, settlement: null, polls: 6, poll_failures: 6 });
      if (lastError) expect(open.last_error).toContain(lastError);
      else expect(open.last_error).toEqual(expect.any(String));
      expect(await ownerMoney(gateway(), OWNER)).toEqual({ spent: before.spent, reserved: before.reserved + C_WITH_VIDEO_RESERVED });
      expect(await gateway().usageRecord(task.requestId)).toBeNull();

      clock().set(submittedAt + 8 * DAY_MS + 1_000);
      expect(await round(gateway())).toBe(1);

      await expectSettled(gateway(), task, {
        settlement: 'reserved',
        costNano: C_WITH_VIDEO_RESERVED,
        interface: 'video_c',
        usage: null,
        errorCode: 'task_unsettled',
      });
      expect(await ownerMoney(gateway(), OWNER)).toEqual({ spent: before.spent + C_WITH_VIDEO_RESERVED, reserved: before.reserved });
      expect(upstreamTask(gateway(), task).queries).toBe(0);

      // Settled means settled: later rounds find nothing.
      clock().advance(DAY_MS);
      expect(await round(gateway())).toBe(0);
    });
  });

  // Rule: following runs on its own schedule; nobody has to call a round or query the task.
  describe('the background schedule', () => {
    let gateway: GatewayHarness;

    beforeEach(async () => {
      gateway = await startGateway({ video: { reconcileIntervalMs: 50, firstPollDelayMs: 0 } });
    });
    afterEach(() => gateway.stop());

    it('settles a succeeded task without any round called by the test or any client query', async () => {
      const before = await ownerMoney(gateway, OWNER);
      const task = await submit(gateway, VENDOR_C, cTextBody(4));
      gateway.simulator.video.succeed(task.upstreamId, { output_seconds: 4, input_seconds: 0, input_image_count: 0 });

      const deadline = Date.now() + 5_000;
      while ((await taskRow(gateway, task.taskId)).settled_at === null && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 25));
      }

      await expectSettled(gateway, task, { settlement: 'usage', costNano: cTextCost(4), interface: 'video_c', errorCode: null });
      expect(await ownerMoney(gateway, OWNER)).toEqual({ spent: before.spent + cTextCost(4), reserved: before.reserved });
    });
  });

  // Rule: a client's query that sees a final status settles the task too, and the task is then
  // never billed again, by the reconciler or by further queries.
  describe('a client query that sees the end', () => {
    const { gateway, clock } = withGateway(shared);

    it('settles the task once, with the same figures the reconciler would use', async () => {
      const before = await ownerMoney(gateway(), OWNER);
      const task = await submit(gateway(), VENDOR_C, C_WITH_VIDEO);
      const usage = { output_seconds: 5, input_seconds: 4, input_image_count: 1 };
      gateway().simulator.video.succeed(task.upstreamId, usage);

      const answer = await call(gateway(), 'GET', VENDOR_C.query(task.taskId), VIDEO_KEYS.teamA2);
      expect(answer.status).toBe(200);
      expect(answer.body.task).toMatchObject({ id: task.taskId, status: 'succeeded' });

      const cost = 5n * PRICES.videoC.outputSecond1080pVideoInput + 4n * PRICES.videoC.inputSecond + 1n * PRICES.videoC.inputImage;
      await expectSettled(gateway(), task, { settlement: 'usage', costNano: cost, interface: 'video_c', usage, errorCode: null });
      const settled = { spent: before.spent + cost, reserved: before.reserved };
      expect(await ownerMoney(gateway(), OWNER)).toEqual(settled);

      clock().advance(VIDEO_TEST_SETTINGS.maxPollDelayMs);
      expect(await round(gateway())).toBe(0);
      expect((await call(gateway(), 'GET', VENDOR_C.query(task.taskId), KEY)).status).toBe(200);
      clock().advance(VIDEO_TEST_SETTINGS.maxPollDelayMs);
      expect(await round(gateway())).toBe(0);

      expect(await ownerMoney(gateway(), OWNER)).toEqual(settled);
      await expectSettled(gateway(), task, { settlement: 'usage', costNano: cost, interface: 'video_c', usage, errorCode: null });
      expect(upstreamTask(gateway(), task).queries).toBe(2);
    });
  });
});
