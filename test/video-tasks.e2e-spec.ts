import { ADMIN_TOKEN_FOR_TESTS, GatewayHarness } from './support/gateway-harness';
import { call, NANO, ownerMoney, taskRow, VENDOR_B, VENDOR_C, VIDEO_KEYS, VIDEO_TEST_SETTINGS, videoConfigYaml } from './support/video-kit';

/**
 * The video task endpoints (SPEC.md "Video tasks"): gateway task ids, isolation per quota
 * owner, submit checks, reservation, cancel and drafts. Settlement is in
 * video-settlement.e2e-spec.ts.
 */

/** video-c: 0.05 per output second; video-b: 2 per 1M output tokens (1 at 480p, 3 at 1080p). */
const VIDEO_C_PER_SECOND = 50_000_000n;
function videoBTokens(height: number, seconds: number): bigint {
  const width = Math.round((height * 16) / 9);
  return BigInt(Math.round((width * height * 24 * seconds) / 1024));
}

/** The kit's models, and video-c-retry: video-c with a retry policy of its own, which a submit must never use. */
function configYaml(simulator: string): string {
  const yaml = videoConfigYaml(simulator);
  const withRetryModel = yaml.replace(
    '\nmodels:\n',
    `
models:
  - id: video-c-retry
    upstream_model: vendor-video-c-2
    interfaces: [video_c]
    lines: [line-a]
    prices: { output_seconds: 0.05 }
    retry: { attempts: 2, backoff_ms: 1, max_backoff_ms: 10 }
`,
  );
  if (withRetryModel === yaml) throw new Error('videoConfigYaml has no models: list to add video-c-retry to');
  return withRetryModel;
}

describe('video tasks', () => {
  let gateway: GatewayHarness;

  beforeAll(async () => {
    gateway = await GatewayHarness.start({ configYaml, settings: { video: VIDEO_TEST_SETTINGS } });
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  // Forgets the requests only: the upstream's tasks live on across tests, as they would.
  beforeEach(() => {
    gateway.simulator.requests.length = 0;
  });

  async function submitC(key: string, body: Record<string, unknown> = {}) {
    return call(gateway, 'POST', VENDOR_C.submit, key, { model: 'video-c', content: [{ type: 'text', text: 'A fox in the snow' }], ...body });
  }

  async function submitB(key: string, body: Record<string, unknown> = {}) {
    return call(gateway, 'POST', VENDOR_B.submit, key, { model: 'video-b', content: [{ type: 'text', text: 'A fox in the snow' }], ...body });
  }

  describe('gateway task ids', () => {
    it('vendor-c: submit answers with a new gateway id, and the upstream got the upstream model', async () => {
      const answer = await submitC(VIDEO_KEYS.teamA1);
      expect(answer.status).toBe(200);
      const upstream = gateway.simulator.video.last()!;
      expect(answer.body.task_id).toMatch(/^vtask_[A-Za-z0-9_-]{24}$/);
      expect(answer.text).not.toContain(upstream.id);
      expect(upstream.model).toBe('vendor-video-c-2');
      expect(answer.headers.get('x-request-id')).toBeTruthy();
      const row = await taskRow(gateway, answer.body.task_id);
      expect(row).toMatchObject({ upstream_task_id: upstream.id, line: 'line-a', status: 'queued', owner_id: 'team-a', interface: 'video_c' });
      expect(row.submit_request_id).toBe(answer.headers.get('x-request-id'));
    });

    it('vendor-c: query returns the upstream task with the gateway id in place of the upstream one', async () => {
      const id = (await submitC(VIDEO_KEYS.teamA1)).body.task_id as string;
      const upstream = gateway.simulator.video.last()!;
      gateway.simulator.video.setStatus(upstream.id, 'running');
      const answer = await call(gateway, 'GET', VENDOR_C.query(id), VIDEO_KEYS.teamA1);
      expect(answer.status).toBe(200);
      expect(answer.body.task).toMatchObject({ id, status: 'running' });
      expect(answer.text).not.toContain(upstream.id);
      expect(answer.headers.get('x-request-id')).toBeTruthy();
    });

    it('vendor-c: a succeeded task keeps its download address exactly as the upstream gave it', async () => {
      const id = (await submitC(VIDEO_KEYS.teamA1, { duration: 6 })).body.task_id as string;
      const upstream = gateway.simulator.video.last()!;
      gateway.simulator.video.succeed(upstream.id);
      const answer = await call(gateway, 'GET', VENDOR_C.query(id), VIDEO_KEYS.teamA1);
      expect(answer.status).toBe(200);
      expect(answer.body.task.id).toBe(id);
      expect(answer.body.task.status).toBe('succeeded');
      expect(answer.body.task.content.url).toBe(`https://videos.simulator.invalid/vc/${upstream.id}.mp4`);
      expect(answer.body.task.usage).toEqual({ output_seconds: 6, input_seconds: 0, input_image_count: 0 });
    });

    it('vendor-b: submit and query carry the gateway id at the top level', async () => {
      const submitted = await submitB(VIDEO_KEYS.teamA1);
      expect(submitted.status).toBe(200);
      const id = submitted.body.id as string;
      const upstream = gateway.simulator.video.last()!;
      expect(id).toMatch(/^vtask_/);
      expect(submitted.text).not.toContain(upstream.id);
      expect(upstream.model).toBe('vendor-video-b-1');
      const answer = await call(gateway, 'GET', VENDOR_B.query(id), VIDEO_KEYS.teamA1);
      expect(answer.status).toBe(200);
      expect(answer.body).toMatchObject({ id, status: 'queued', model: 'vendor-video-b-1' });
      expect(answer.text).not.toContain(upstream.id);
    });

    it('upstream errors on a query name the gateway id, never the upstream one', async () => {
      const id = (await submitC(VIDEO_KEYS.teamA1)).body.task_id as string;
      const upstream = gateway.simulator.video.last()!;
      gateway.simulator.failNext(`/v2/query/video_generation/${upstream.id}`, {
        status: 400,
        body: { base_resp: { status_code: 2013, status_msg: `task ${upstream.id} cannot be read now` } },
      });
      const answer = await call(gateway, 'GET', VENDOR_C.query(id), VIDEO_KEYS.teamA1);
      expect(answer.status).toBe(400);
      expect(answer.body.base_resp.status_msg).toBe(`task ${id} cannot be read now`);
      expect(answer.text).not.toContain(upstream.id);
    });

    it('gives two submits of the same body two tasks (no de-duplication)', async () => {
      const first = await submitC(VIDEO_KEYS.teamA1, { duration: 5 });
      const second = await submitC(VIDEO_KEYS.teamA1, { duration: 5 });
      expect(first.body.task_id).not.toBe(second.body.task_id);
      const submits = gateway.simulator.requests.filter((request) => request.method === 'POST');
      expect(submits).toHaveLength(2);
      const [a, b] = await Promise.all([taskRow(gateway, first.body.task_id), taskRow(gateway, second.body.task_id)]);
      expect(a.upstream_task_id).not.toBe(b.upstream_task_id);
    });
  });

  describe('isolation by quota owner', () => {
    let cTask: string;
    let bTask: string;
    let upstreamC: string;
    let aliceTask: string;

    beforeAll(async () => {
      cTask = (await submitC(VIDEO_KEYS.teamA1)).body.task_id;
      upstreamC = gateway.simulator.video.last()!.id;
      bTask = (await submitB(VIDEO_KEYS.teamA1)).body.id;
      aliceTask = (await submitC(VIDEO_KEYS.alice1)).body.task_id;
    });

    it('another key of the same project may query and cancel', async () => {
      expect((await call(gateway, 'GET', VENDOR_C.query(cTask), VIDEO_KEYS.teamA2)).status).toBe(200);
      expect((await call(gateway, 'GET', VENDOR_B.query(bTask), VIDEO_KEYS.teamA2)).status).toBe(200);
    });

    it('another personal key of the same member may query, whatever its model scope', async () => {
      expect((await call(gateway, 'GET', VENDOR_C.query(aliceTask), VIDEO_KEYS.alice2)).status).toBe(200);
    });

    it.each([
      ['another project', VIDEO_KEYS.teamB],
      ['another member', VIDEO_KEYS.bob],
    ])('a key of %s gets 404 on query and cancel, and nothing reaches the upstream', async (_, key) => {
      for (const answer of [
        await call(gateway, 'GET', VENDOR_C.query(cTask), key),
        await call(gateway, 'DELETE', VENDOR_C.cancel(cTask), key),
        await call(gateway, 'GET', VENDOR_C.query(aliceTask), key === VIDEO_KEYS.bob ? key : VIDEO_KEYS.teamA1),
      ]) {
        expect(answer.status).toBe(404);
        expect(answer.body.error).toMatchObject({ type: 'not_found_error', code: 'not_found' });
      }
      expect(gateway.simulator.requests).toHaveLength(0);
    });

    it("the other vendor's path gives 404", async () => {
      expect((await call(gateway, 'GET', VENDOR_B.query(cTask), VIDEO_KEYS.teamA1)).status).toBe(404);
      expect((await call(gateway, 'DELETE', VENDOR_B.cancel(cTask), VIDEO_KEYS.teamA1)).status).toBe(404);
      expect((await call(gateway, 'GET', VENDOR_C.query(bTask), VIDEO_KEYS.teamA1)).status).toBe(404);
    });

    it('a raw upstream id gives 404', async () => {
      expect((await call(gateway, 'GET', VENDOR_C.query(upstreamC), VIDEO_KEYS.teamA1)).status).toBe(404);
      expect((await call(gateway, 'DELETE', VENDOR_C.cancel(upstreamC), VIDEO_KEYS.teamA1)).status).toBe(404);
      expect(gateway.simulator.requests).toHaveLength(0);
    });

    it('query and cancel need a valid key (401)', async () => {
      expect((await call(gateway, 'GET', VENDOR_C.query(cTask), undefined)).status).toBe(401);
      expect((await call(gateway, 'GET', VENDOR_C.query(cTask), 'gk-not-a-key')).status).toBe(401);
    });
  });

  describe('submit checks', () => {
    it.each([
      ['callback_url', { callback_url: 'https://example.com/hook' }],
      ['tools', { tools: [{ type: 'web_search' }] }],
      ['a type that does not fit its material', { content: [{ type: 'image_url', video_url: { url: 'https://example.com/a.mp4' } }] }],
      ['a text item carrying an image', { content: [{ type: 'text', text: 'x', image_url: { url: 'https://example.com/a.png' } }] }],
      ['a material stored upstream (asset address)', { content: [{ type: 'image_url', image_url: { url: 'asset://ast-123' } }] }],
      ['a material stored upstream (file id)', { content: [{ type: 'video_url', video_url: { url: 'https://x.example/a.mp4' }, file_id: 'file-1' }] }],
      ['a draft on vendor-c', { draft: true }],
      ['a zero duration', { duration: 0 }],
    ])('%s gives 400; nothing is forwarded or reserved', async (_, extra) => {
      const before = await ownerMoney(gateway, 'team-a');
      const answer = await submitC(VIDEO_KEYS.teamA1, extra);
      expect(answer.status).toBe(400);
      expect(answer.body.error).toMatchObject({ type: 'invalid_request_error' });
      expect(typeof answer.body.error.message).toBe('string');
      expect(gateway.simulator.requests).toHaveLength(0);
      expect(await ownerMoney(gateway, 'team-a')).toEqual(before);
      const [{ count }] = await gateway.dataSource.query(`SELECT count(*)::int AS count FROM video_task WHERE status = 'submitting'`);
      expect(count).toBe(0);
    });

    it('a model of another interface gives 400, an unknown one 404, one outside the scope 403', async () => {
      expect((await call(gateway, 'POST', VENDOR_C.submit, VIDEO_KEYS.teamA1, { model: 'chat-model' })).status).toBe(400);
      expect((await call(gateway, 'POST', VENDOR_C.submit, VIDEO_KEYS.teamA1, { model: 'video-b' })).status).toBe(400);
      expect((await call(gateway, 'POST', VENDOR_C.submit, VIDEO_KEYS.teamA1, { model: 'no-such-video' })).status).toBe(404);
      expect((await call(gateway, 'POST', VENDOR_C.submit, VIDEO_KEYS.chatOnly, { model: 'video-c' })).status).toBe(403);
      expect(gateway.simulator.requests).toHaveLength(0);
    });

    it('accepts http(s) and data: materials and forwards the content as sent', async () => {
      const content = [
        { type: 'text', text: 'Make it move' },
        { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
        { type: 'video_url', video_url: { url: 'https://example.com/in.mp4' } },
      ];
      const answer = await submitC(VIDEO_KEYS.teamA1, { content, duration: 5 });
      expect(answer.status).toBe(200);
      expect(gateway.simulator.video.last()!.body.content).toEqual(content);
    });
  });

  describe('reservation', () => {
    it('reserves from duration and resolution, and 30 s when no duration is given', async () => {
      const before = await ownerMoney(gateway, 'team-b');
      const first = await submitC(VIDEO_KEYS.teamB, { duration: 10, resolution: '1080p' });
      const second = await submitC(VIDEO_KEYS.teamB);
      expect(BigInt((await taskRow(gateway, first.body.task_id)).reserved_nano)).toBe(10n * 100_000_000n);
      expect(BigInt((await taskRow(gateway, second.body.task_id)).reserved_nano)).toBe(30n * VIDEO_C_PER_SECOND);
      const after = await ownerMoney(gateway, 'team-b');
      expect(after.reserved - before.reserved).toBe(10n * 100_000_000n + 30n * VIDEO_C_PER_SECOND);
      expect(after.spent).toBe(before.spent);
    });

    it('vendor-b reserves output tokens of the requested resolution; drafts at 480p', async () => {
      const full = await submitB(VIDEO_KEYS.teamB, { duration: 5, resolution: '1080p' });
      const draft = await submitB(VIDEO_KEYS.teamB, { duration: 5, resolution: '1080p', draft: true });
      // 1 and 3 currency units per 1M tokens: nano per token 1,000 and 3,000.
      expect(BigInt((await taskRow(gateway, full.body.id)).reserved_nano)).toBe(videoBTokens(1080, 5) * 3_000n);
      expect(BigInt((await taskRow(gateway, draft.body.id)).reserved_nano)).toBe(videoBTokens(480, 5) * 1_000n);
    });

    it('a submit that does not fit the budget gives 402 and is not forwarded; existing tasks stay usable', async () => {
      const small = await submitC(VIDEO_KEYS.tight, { duration: 10 }); // 0.5 of a budget of 1
      expect(small.status).toBe(200);
      gateway.simulator.requests.length = 0;
      const big = await submitC(VIDEO_KEYS.tight, { duration: 20 }); // 1.0 more does not fit
      expect(big.status).toBe(402);
      expect(big.body.error).toMatchObject({ code: 'insufficient_quota' });
      expect(gateway.simulator.requests).toHaveLength(0);
      expect(await ownerMoney(gateway, 'tight')).toEqual({ spent: 0n, reserved: 10n * VIDEO_C_PER_SECOND });

      expect((await call(gateway, 'GET', VENDOR_C.query(small.body.task_id), VIDEO_KEYS.tight)).status).toBe(200);
      const cancelled = await call(gateway, 'DELETE', VENDOR_C.cancel(small.body.task_id), VIDEO_KEYS.tight);
      expect(cancelled.status).toBe(200);
      expect(await ownerMoney(gateway, 'tight')).toEqual({ spent: 0n, reserved: 0n });
    });

    it('an upstream that refuses the submit gets the reservation back and leaves a record of the failure', async () => {
      const before = await ownerMoney(gateway, 'team-b');
      gateway.simulator.failNext('/v2/video_generation', { status: 400, body: { base_resp: { status_code: 2013, status_msg: 'bad prompt' } } });
      const refused = await submitC(VIDEO_KEYS.teamB, { duration: 8 });
      expect(refused.status).toBe(400);
      expect(refused.body.base_resp.status_msg).toBe('bad prompt');
      gateway.simulator.failNext('/v2/video_generation', { kind: 'reset-before-headers' });
      const broken = await submitC(VIDEO_KEYS.teamB, { duration: 8 });
      expect(broken.status).toBe(502);
      expect(await ownerMoney(gateway, 'team-b')).toEqual(before);
      const record = await gateway.usageRecord(refused.headers.get('x-request-id')!);
      expect(record).toMatchObject({ interface: 'video_c', status: 400, costNano: 0n });
      expect(await gateway.usageRecord(broken.headers.get('x-request-id')!)).toMatchObject({ status: 502, costNano: 0n });
      const [{ count }] = await gateway.dataSource.query(
        `SELECT count(*)::int AS count FROM video_task WHERE owner_id = 'team-b' AND upstream_task_id IS NULL`,
      );
      expect(count).toBe(0);
    });
  });

  describe('upstream failures', () => {
    it('a submit answered without a task id gives 502, gets the reservation back and is recorded', async () => {
      const before = await ownerMoney(gateway, 'team-b');
      gateway.simulator.failNext('/v2/video_generation', { status: 200, body: { base_resp: { status_code: 0, status_msg: 'success' } } });
      const answer = await submitC(VIDEO_KEYS.teamB, { duration: 8 });
      expect(answer.status).toBe(502);
      expect(answer.body.error).toMatchObject({ code: 'upstream_failed' });
      expect(await ownerMoney(gateway, 'team-b')).toEqual(before);
      expect(await gateway.usageRecord(answer.headers.get('x-request-id')!)).toMatchObject({ status: 502, errorCode: 'upstream_no_task_id', costNano: 0n });
    });

    it('a submit answered 503 is sent once, even for a model that retries, and gets the reservation back', async () => {
      const before = await ownerMoney(gateway, 'team-b');
      gateway.simulator.failNext('/v2/video_generation', { status: 503, body: { base_resp: { status_code: 1002, status_msg: 'busy' } } });
      const answer = await submitC(VIDEO_KEYS.teamB, { model: 'video-c-retry', duration: 8 });
      const submits = gateway.simulator.requests.filter((request) => request.method === 'POST' && request.path === '/v2/video_generation');
      expect(submits).toHaveLength(1);
      expect(answer.status).toBe(503);
      expect(await ownerMoney(gateway, 'team-b')).toEqual(before);
      expect(await gateway.usageRecord(answer.headers.get('x-request-id')!)).toMatchObject({
        interface: 'video_c',
        status: 503,
        costNano: 0n,
        linesTried: null,
      });
      const [{ count }] = await gateway.dataSource.query(
        `SELECT count(*)::int AS count FROM video_task WHERE owner_id = 'team-b' AND upstream_task_id IS NULL`,
      );
      expect(count).toBe(0);
    });

    it("an upstream refusing the gateway's credentials on submit gives 502 and the reservation back", async () => {
      const before = await ownerMoney(gateway, 'team-b');
      gateway.simulator.failNext('/api/v3/contents/generations/tasks', { status: 401 });
      const answer = await submitB(VIDEO_KEYS.teamB, { duration: 5 });
      expect(answer.status).toBe(502);
      expect(answer.body.error).toMatchObject({ code: 'upstream_failed' });
      expect(await ownerMoney(gateway, 'team-b')).toEqual(before);
    });

    it.each([
      ['refuses the credentials (403)', 502, 'upstream_failed', { status: 403 }],
      ['resets the connection', 502, 'upstream_failed', { kind: 'reset-before-headers' as const }],
    ])('a query whose upstream %s gives %s %s, and the task is kept', async (_, status, code, failure) => {
      const id = (await submitC(VIDEO_KEYS.teamA1)).body.task_id as string;
      const upstream = gateway.simulator.video.last()!;
      gateway.simulator.failNext(`/v2/query/video_generation/${upstream.id}`, failure);
      const answer = await call(gateway, 'GET', VENDOR_C.query(id), VIDEO_KEYS.teamA1);
      expect(answer.status).toBe(status);
      expect(answer.body.error).toMatchObject({ code });
      expect(answer.text).not.toContain(upstream.id);
      expect(await taskRow(gateway, id)).toMatchObject({ status: 'queued', settled_at: null });
      expect((await call(gateway, 'GET', VENDOR_C.query(id), VIDEO_KEYS.teamA1)).status).toBe(200);
    });
  });

  describe('cancel', () => {
    it('cancels a queued task: upstream cancelled, reservation released, not billed', async () => {
      const submitted = await submitC(VIDEO_KEYS.alice1, { duration: 12 });
      const upstream = gateway.simulator.video.last()!;
      const before = await ownerMoney(gateway, 'alice');
      const answer = await call(gateway, 'DELETE', VENDOR_C.cancel(submitted.body.task_id), VIDEO_KEYS.alice2);
      expect(answer.status).toBe(200);
      expect(answer.text).not.toContain(upstream.id);
      expect(upstream.status).toBe('cancelled');
      expect(await ownerMoney(gateway, 'alice')).toEqual({ spent: before.spent, reserved: before.reserved - 12n * VIDEO_C_PER_SECOND });
      const row = await taskRow(gateway, submitted.body.task_id);
      expect(row).toMatchObject({ status: 'cancelled', settlement: 'not_billed' });
      const record = await gateway.usageRecord(submitted.headers.get('x-request-id')!);
      expect(record).toMatchObject({ costNano: 0n, errorCode: 'task_cancelled' });
    });

    it('a running task gives 400 and stays as it is', async () => {
      const submitted = await submitB(VIDEO_KEYS.bob, { duration: 5 });
      const upstream = gateway.simulator.video.last()!;
      gateway.simulator.video.setStatus(upstream.id, 'running');
      const before = await ownerMoney(gateway, 'bob');
      const answer = await call(gateway, 'DELETE', VENDOR_B.cancel(submitted.body.id), VIDEO_KEYS.bob);
      expect(answer.status).toBe(400);
      expect(answer.body.error.message).toContain('running');
      expect(upstream.status).toBe('running');
      expect(upstream.cancels).toBe(0);
      expect(await ownerMoney(gateway, 'bob')).toEqual(before);
      expect(await taskRow(gateway, submitted.body.id)).toMatchObject({ status: 'running', settled_at: null });
      // Known to be running now: a second cancel is refused without asking the upstream.
      const again = await call(gateway, 'DELETE', VENDOR_B.cancel(submitted.body.id), VIDEO_KEYS.bob);
      expect(again.status).toBe(400);
      expect(upstream.cancels).toBe(0);
    });

    it('a cancelled task cannot be cancelled again', async () => {
      const submitted = await submitB(VIDEO_KEYS.bob);
      expect((await call(gateway, 'DELETE', VENDOR_B.cancel(submitted.body.id), VIDEO_KEYS.bob)).status).toBe(200);
      const again = await call(gateway, 'DELETE', VENDOR_B.cancel(submitted.body.id), VIDEO_KEYS.bob);
      expect(again.status).toBe(400);
      expect(gateway.simulator.video.last()!.cancels).toBe(1);
    });
  });

  describe('drafts (vendor-b)', () => {
    it('a draft task is referenced by its gateway id and forwarded with its upstream id', async () => {
      const draft = await submitB(VIDEO_KEYS.teamA1, { draft: true, duration: 5 });
      expect(draft.status).toBe(200);
      const upstreamDraft = gateway.simulator.video.last()!;
      expect(upstreamDraft.draft).toBe(true);
      const final = await submitB(VIDEO_KEYS.teamA2, { content: [{ type: 'draft_task', draft_task: { id: draft.body.id } }] });
      expect(final.status).toBe(200);
      const upstreamFinal = gateway.simulator.video.last()!;
      expect(upstreamFinal.draftTaskId).toBe(upstreamDraft.id);
      expect(upstreamFinal.body.content).toEqual([{ type: 'draft_task', draft_task: { id: upstreamDraft.id } }]);
      expect(await taskRow(gateway, draft.body.id)).toMatchObject({ draft: true });
      expect(await taskRow(gateway, final.body.id)).toMatchObject({ draft: false });
    });

    it('a submit over the spool threshold keeps its data URLs whole when its draft ids are replaced', async () => {
      const draft = await submitB(VIDEO_KEYS.teamA1, { draft: true, duration: 5 });
      const upstreamDraft = gateway.simulator.video.last()!;
      // Over 1 MiB: the body is spooled, and its skeleton cuts the data URL after 4 KiB.
      const picture = `data:image/png;base64,${'QUJD'.repeat(600_000)}`;
      const content = [
        { type: 'draft_task', draft_task: { id: draft.body.id } },
        { type: 'image_url', image_url: { url: picture } },
      ];
      const final = await submitB(VIDEO_KEYS.teamA2, { content });
      expect(final.status).toBe(200);
      expect(gateway.simulator.video.last()!.body.content).toEqual([
        { type: 'draft_task', draft_task: { id: upstreamDraft.id } },
        { type: 'image_url', image_url: { url: picture } },
      ]);
    });

    it('a draft of another owner, a task that is not a draft, or an unknown id give 404 and nothing is forwarded', async () => {
      const draft = await submitB(VIDEO_KEYS.teamA1, { draft: true });
      const plain = await submitB(VIDEO_KEYS.teamB);
      const upstreamDraft = gateway.simulator.video.get(gateway.simulator.video.list('vendor-b').at(-2)!.id)!;
      gateway.simulator.requests.length = 0;
      const before = await ownerMoney(gateway, 'team-b');
      for (const id of [draft.body.id, plain.body.id, upstreamDraft.id, 'vtask_unknown']) {
        const answer = await submitB(VIDEO_KEYS.teamB, { content: [{ type: 'draft_task', draft_task: { id } }] });
        expect(answer.status).toBe(404);
      }
      expect(gateway.simulator.requests).toHaveLength(0);
      expect(await ownerMoney(gateway, 'team-b')).toEqual(before);
    });
  });

  it('GET /admin/usage/{id} does not know a task before it settles, and knows it after', async () => {
    const submitted = await submitC(VIDEO_KEYS.teamA1, { duration: 4 });
    const requestId = submitted.headers.get('x-request-id')!;
    const admin = { authorization: `Bearer ${ADMIN_TOKEN_FOR_TESTS}` };
    expect((await fetch(`${gateway.url}/admin/usage/${requestId}`, { headers: admin })).status).toBe(404);
    gateway.simulator.video.succeed(gateway.simulator.video.last()!.id);
    expect((await call(gateway, 'GET', VENDOR_C.query(submitted.body.task_id), VIDEO_KEYS.teamA1)).status).toBe(200);
    const lookup = await fetch(`${gateway.url}/admin/usage/${requestId}`, { headers: admin });
    expect(lookup.status).toBe(200);
    expect(await lookup.json()).toMatchObject({ request_id: requestId, interface: 'video_c', cost_nano: String(4n * VIDEO_C_PER_SECOND) });
  });

  it('GET /admin/video-tasks lists a task as open with its reservation, then as settled with its cost', async () => {
    const admin = { authorization: `Bearer ${ADMIN_TOKEN_FOR_TESTS}` };
    const list = async (query: string) => (await call(gateway, 'GET', `/admin/video-tasks?owner=team-a&${query}`, undefined, undefined, admin)).body;
    const submitted = await submitC(VIDEO_KEYS.teamA1, { duration: 3 });
    const taskId: string = submitted.body.task_id;

    const open = await list('state=open');
    expect(open.data[0]).toMatchObject({
      id: taskId,
      owner_id: 'team-a',
      interface: 'video_c',
      model: 'video-c',
      submit_request_id: submitted.headers.get('x-request-id'),
      reserved_nano: String(3n * VIDEO_C_PER_SECOND),
      settled_at: null,
      cost: null,
    });
    expect((await list('state=settled')).data.map((task: { id: string }) => task.id)).not.toContain(taskId);

    gateway.simulator.video.succeed(gateway.simulator.video.last()!.id);
    expect((await call(gateway, 'GET', VENDOR_C.query(taskId), VIDEO_KEYS.teamA1)).status).toBe(200);

    const settled = await list('state=settled&limit=1');
    expect(settled.data).toEqual([
      expect.objectContaining({ id: taskId, settlement: 'usage', cost_nano: String(3n * VIDEO_C_PER_SECOND), status: 'succeeded' }),
    ]);
    expect((await list('state=open')).data.map((task: { id: string }) => task.id)).not.toContain(taskId);
    const bad = await call(gateway, 'GET', '/admin/video-tasks?state=done', undefined, undefined, admin);
    expect([bad.status, bad.body.error.message]).toEqual([400, 'state: must be open or settled']);
  });

  it('money stays exact: nano-units per currency unit', () => {
    expect(VIDEO_C_PER_SECOND * 20n).toBe(NANO);
  });
});
