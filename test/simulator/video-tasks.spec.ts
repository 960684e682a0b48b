import { UpstreamSimulator } from './upstream-simulator';
import { VideoTaskBoard, defaultUsage } from './video-tasks';

/** One answer as fetch saw it; `json` is undefined when the body was not JSON. */
interface Answer {
  status: number;
  contentType: string | null;
  json: any;
}

const KEY = 'sk-video';
const C_SUBMIT = '/v2/video_generation';
const C_QUERY = '/v2/query/video_generation';
const B_TASKS = '/api/v3/contents/generations/tasks';
const OK = { status_code: 0, status_msg: 'success' };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('UpstreamSimulator video tasks', () => {
  const simulator = new UpstreamSimulator({ apiKey: KEY });
  let baseUrl: string;

  beforeAll(async () => {
    baseUrl = await simulator.start();
  });
  afterAll(() => simulator.stop());
  beforeEach(() => simulator.reset());

  /** Sends a request with the right key unless headers say otherwise; a string body goes as is. */
  async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = { authorization: `Bearer ${KEY}` }): Promise<Answer> {
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await response.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: response.status, contentType: response.headers.get('content-type'), json };
  }

  const submitC = async (body: Record<string, unknown> = { model: 'video-c-1', prompt: 'a cat' }) =>
    (await call('POST', C_SUBMIT, body)).json.task_id as string;
  const submitB = async (body: Record<string, unknown> = { model: 'video-b-1', content: [{ type: 'text', text: 'a cat' }] }) =>
    (await call('POST', B_TASKS, body)).json.id as string;

  describe('vendor-c', () => {
    it('creates a queued task with a vc- id and records the request', async () => {
      const body = { model: 'video-c-1', prompt: 'a cat', duration: 6, resolution: '768P' };
      const answer = await call('POST', C_SUBMIT, body);

      expect(answer).toMatchObject({ status: 200, contentType: 'application/json' });
      expect(answer.json).toEqual({ task_id: expect.stringMatching(/^vc-[0-9a-f]{24}$/), base_resp: OK });
      const task = simulator.video.last();
      expect(task).toMatchObject({ id: answer.json.task_id, vendor: 'vendor-c', model: 'video-c-1', status: 'queued', body, draft: false });
      expect(simulator.requests).toEqual([expect.objectContaining({ method: 'POST', path: C_SUBMIT, json: body })]);
    });

    it.each([
      ['an array body', [{ model: 'video-c-1' }]],
      ['a body that is not JSON', 'model=video-c-1'],
      ['a body without a string model', { model: 7, prompt: 'a cat' }],
    ])('answers %s with 400 invalid params', async (_case, body) => {
      const answer = await call('POST', C_SUBMIT, body);

      expect(answer.status).toBe(400);
      expect(answer.contentType).toBe('application/json');
      expect(answer.json).toEqual({ base_resp: { status_code: 2013, status_msg: expect.stringMatching(/^invalid params: /) } });
      expect(simulator.video.list()).toHaveLength(0);
    });

    it('reports a queued task with the echoed duration and resolution only', async () => {
      const id = await submitC({ model: 'video-c-1', duration: 10, resolution: '1080P' });
      const bare = await submitC({ model: 'video-c-1' });

      const answer = await call('GET', `${C_QUERY}/${id}`);
      const bareAnswer = await call('GET', `${C_QUERY}/${bare}`);

      expect(answer.status).toBe(200);
      expect(answer.json).toEqual({
        task: { id, model: 'video-c-1', status: 'queued', duration: 10, resolution: '1080P', created_at: expect.any(Number) },
        base_resp: OK,
      });
      expect(Math.abs(answer.json.task.created_at - Date.now() / 1000)).toBeLessThan(5);
      expect(bareAnswer.json.task).toEqual({ id: bare, model: 'video-c-1', status: 'queued', created_at: expect.any(Number) });
      expect(simulator.video.get(id)?.queries).toBe(1);
    });

    it('reports the result address and usage once succeeded, and the error once failed', async () => {
      const [withUsage, withoutUsage, failed] = [await submitC(), await submitC(), await submitC()];
      simulator.video.succeed(withUsage, { output_seconds: 3, input_seconds: 0, input_image_count: 1 });
      simulator.video.succeed(withoutUsage, null);
      simulator.video.setStatus(failed, 'failed', { code: 1026, message: 'sensitive content' });

      const first = (await call('GET', `${C_QUERY}/${withUsage}`)).json.task;
      const second = (await call('GET', `${C_QUERY}/${withoutUsage}`)).json.task;
      const third = (await call('GET', `${C_QUERY}/${failed}`)).json.task;

      expect(first).toMatchObject({
        status: 'succeeded',
        content: { url: `https://videos.simulator.invalid/vc/${withUsage}.mp4` },
        usage: { output_seconds: 3, input_seconds: 0, input_image_count: 1 },
      });
      expect(first.error).toBeUndefined();
      expect(second).toMatchObject({ status: 'succeeded', content: { url: expect.any(String) } });
      expect(second.usage).toBeUndefined();
      expect(third).toMatchObject({ status: 'failed', error: { code: 1026, message: 'sensitive content' } });
      expect(third.content).toBeUndefined();
    });

    it('answers an unknown id, or a vendor-b id, with 404 in its own shape', async () => {
      const vendorB = await submitB();

      for (const id of ['vc-000000000000000000000000', vendorB]) {
        const answer = await call('GET', `${C_QUERY}/${id}`);
        expect(answer.status).toBe(404);
        expect(answer.json).toEqual({ base_resp: { status_code: 1004, status_msg: `task ${id} not found` } });
      }
      expect(simulator.video.get(vendorB)?.queries).toBe(0);
    });

    it('cancels a queued task only', async () => {
      const [queued, running] = [await submitC(), await submitC()];
      simulator.video.setStatus(running, 'running');

      const cancelled = await call('DELETE', `${C_SUBMIT}/${queued}`);
      const again = await call('DELETE', `${C_SUBMIT}/${queued}`);
      const refused = await call('DELETE', `${C_SUBMIT}/${running}`);
      const unknown = await call('DELETE', `${C_SUBMIT}/vc-nothing`);

      expect(cancelled).toMatchObject({ status: 200, json: { task: { id: queued, status: 'cancelled' }, base_resp: OK } });
      expect(again.status).toBe(400);
      expect(again.json).toEqual({
        base_resp: { status_code: 2013, status_msg: `only queued tasks can be cancelled; task ${queued} is cancelled` },
      });
      expect(refused.json.base_resp.status_msg).toBe(`only queued tasks can be cancelled; task ${running} is running`);
      expect(unknown).toMatchObject({ status: 404, json: { base_resp: { status_code: 1004, status_msg: 'task vc-nothing not found' } } });
      expect(simulator.video.get(queued)).toMatchObject({ status: 'cancelled', cancels: 2, queries: 0 });
      expect(simulator.video.get(running)).toMatchObject({ status: 'running', cancels: 1 });
    });

    it('answers a wrong key with 401 in its own shape', async () => {
      const answer = await call('POST', C_SUBMIT, { model: 'video-c-1' }, { authorization: 'Bearer sk-wrong' });

      expect(answer.status).toBe(401);
      expect(answer.json).toEqual({ base_resp: { status_code: 2049, status_msg: 'invalid api key' } });
      expect(simulator.video.list()).toHaveLength(0);
    });
  });

  describe('vendor-b', () => {
    it('creates a queued task with a cgt- id', async () => {
      const answer = await call('POST', B_TASKS, { model: 'video-b-1', content: [{ type: 'text', text: 'a cat' }] });

      expect(answer).toMatchObject({ status: 200, contentType: 'application/json' });
      expect(answer.json).toEqual({ id: expect.stringMatching(/^cgt-[0-9a-f]{24}$/) });
      expect(simulator.video.get(answer.json.id)).toMatchObject({ vendor: 'vendor-b', model: 'video-b-1', status: 'queued', draft: false });
    });

    it.each([
      ['an array body', [{ model: 'video-b-1' }]],
      ['a body that is not JSON', '{"model":'],
      ['a body without a model', { content: [] }],
    ])('answers %s with 400 InvalidParameter on model', async (_case, body) => {
      const answer = await call('POST', B_TASKS, body);

      expect(answer.status).toBe(400);
      expect(answer.json).toEqual({ error: { code: 'InvalidParameter', message: expect.any(String), param: 'model', type: 'BadRequest' } });
    });

    it('accepts a draft_task item naming a draft and records it on the new task', async () => {
      const draft = await submitB({ model: 'video-b-1', draft: true, content: [{ type: 'text', text: 'a cat' }] });

      const final = await submitB({ model: 'video-b-1', content: [{ type: 'draft_task', draft_task: { id: draft } }] });

      expect(simulator.video.get(draft)).toMatchObject({ draft: true });
      expect(simulator.video.get(final)).toMatchObject({ draft: false, draftTaskId: draft });
      expect((await call('GET', `${B_TASKS}/${draft}`)).json.draft).toBe(true);
      expect((await call('GET', `${B_TASKS}/${final}`)).json).not.toHaveProperty('draft');
    });

    it('refuses a draft_task item naming no draft of its own vendor', async () => {
      const notDraft = await submitB();
      const vendorC = await submitC();

      for (const id of [notDraft, vendorC, 'cgt-000000000000000000000000', 42]) {
        const answer = await call('POST', B_TASKS, { model: 'video-b-1', content: [{ type: 'draft_task', draft_task: { id } }] });
        expect(answer.status).toBe(400);
        expect(answer.json.error).toMatchObject({ code: 'InvalidParameter', param: 'content', type: 'BadRequest' });
      }
      expect(simulator.video.list('vendor-b')).toHaveLength(1);
    });

    it('reports the task at the top level, with result and usage once succeeded', async () => {
      const id = await submitB({ model: 'video-b-1', duration: 5, resolution: '720p', content: [] });

      const queued = await call('GET', `${B_TASKS}/${id}`);
      simulator.video.succeed(id);
      const succeeded = await call('GET', `${B_TASKS}/${id}`);

      expect(queued.json).toEqual({
        id,
        model: 'video-b-1',
        status: 'queued',
        created_at: expect.any(Number),
        updated_at: expect.any(Number),
        duration: 5,
        resolution: '720p',
      });
      expect(succeeded.json).toMatchObject({
        status: 'succeeded',
        content: { video_url: `https://videos.simulator.invalid/vb/${id}.mp4` },
        usage: { completion_tokens: 108000, total_tokens: 108000 },
      });
      expect(succeeded.json.updated_at).toBeGreaterThanOrEqual(succeeded.json.created_at);
      expect(simulator.video.get(id)?.queries).toBe(2);
    });

    it('reports failed and expired tasks without a result', async () => {
      const [failed, expired] = [await submitB(), await submitB()];
      simulator.video.setStatus(failed, 'failed');
      simulator.video.setStatus(expired, 'expired');

      const failedAnswer = (await call('GET', `${B_TASKS}/${failed}`)).json;
      const expiredAnswer = (await call('GET', `${B_TASKS}/${expired}`)).json;

      expect(failedAnswer).toMatchObject({ status: 'failed', error: { code: 'InternalServiceError', message: expect.any(String) } });
      expect(failedAnswer).not.toHaveProperty('content');
      expect(expiredAnswer.status).toBe('expired');
      expect(expiredAnswer).not.toHaveProperty('error');
      expect(expiredAnswer).not.toHaveProperty('usage');
    });

    it('answers an unknown id, or a vendor-c id, with 404 ResourceNotFound', async () => {
      const vendorC = await submitC();

      for (const id of ['cgt-nothing', vendorC]) {
        for (const method of ['GET', 'DELETE']) {
          const answer = await call(method, `${B_TASKS}/${id}`);
          expect(answer.status).toBe(404);
          expect(answer.json).toEqual({ error: { code: 'ResourceNotFound', message: `task ${id} not found`, type: 'NotFound' } });
        }
      }
    });

    it('cancels a queued task only', async () => {
      const [queued, succeeded] = [await submitB(), await submitB()];
      simulator.video.succeed(succeeded);

      const cancelled = await call('DELETE', `${B_TASKS}/${queued}`);
      const refused = await call('DELETE', `${B_TASKS}/${succeeded}`);

      expect(cancelled).toMatchObject({ status: 200, contentType: 'application/json', json: {} });
      expect(refused.status).toBe(400);
      expect(refused.json).toEqual({
        error: { code: 'InvalidAction', message: `only queued tasks can be cancelled; task ${succeeded} is succeeded`, type: 'BadRequest' },
      });
      expect((await call('GET', `${B_TASKS}/${queued}`)).json.status).toBe('cancelled');
      expect(simulator.video.get(queued)).toMatchObject({ status: 'cancelled', cancels: 1, queries: 1 });
    });

    it('answers a missing key with 401 in its own shape', async () => {
      const answer = await call('GET', `${B_TASKS}/cgt-any`, undefined, {});

      expect(answer.status).toBe(401);
      expect(answer.json).toEqual({ error: { code: 'AuthenticationError', message: 'invalid api key', type: 'Unauthorized' } });
    });
  });

  describe('planned failures', () => {
    it('fail a query path in the vendor shape, keyed without the query string, then recover', async () => {
      const id = await submitC();
      simulator.failNext(`${C_QUERY}/${id}`, { status: 503, headers: { 'retry-after': '1' } });

      const failed = await fetch(`${baseUrl}${C_QUERY}/${id}?attempt=1`, { headers: { authorization: `Bearer ${KEY}` } });
      const recovered = await call('GET', `${C_QUERY}/${id}`);

      expect(failed.status).toBe(503);
      expect(failed.headers.get('retry-after')).toBe('1');
      expect(await failed.json()).toEqual({ base_resp: { status_code: 1013, status_msg: 'Simulated upstream failure (503)' } });
      expect(recovered.json.task.status).toBe('queued');
      expect(simulator.video.get(id)?.queries).toBe(1);
      expect(simulator.requests.map((request) => request.path)).toEqual([C_SUBMIT, `${C_QUERY}/${id}?attempt=1`, `${C_QUERY}/${id}`]);
    });

    it('fail a vendor-b submit in its error shape, creating no task', async () => {
      simulator.failNext(B_TASKS, { status: 429 });

      const answer = await call('POST', B_TASKS, { model: 'video-b-1', content: [] });

      expect(answer.status).toBe(429);
      expect(answer.json).toEqual({
        error: { code: 'RateLimitExceeded', message: 'Simulated upstream failure (429)', type: 'TooManyRequests' },
      });
      expect(simulator.video.list()).toHaveLength(0);
    });

    it('reset, delay and hold video requests like any other', async () => {
      const id = await submitB();
      simulator.failNext(`${B_TASKS}/${id}`, { kind: 'reset-before-headers' });
      simulator.failNext(`${B_TASKS}/${id}`, { kind: 'delay', ms: 100 });
      simulator.failNext(`${B_TASKS}/${id}`, { kind: 'never-respond' });

      await expect(call('GET', `${B_TASKS}/${id}`)).rejects.toThrow();
      const startedAt = Date.now();
      const delayed = await call('GET', `${B_TASKS}/${id}`);
      const delayedMs = Date.now() - startedAt;
      const held = fetch(`${baseUrl}${B_TASKS}/${id}`, { headers: { authorization: `Bearer ${KEY}` }, signal: AbortSignal.timeout(150) });

      expect(delayed.json.status).toBe('queued');
      expect(delayedMs).toBeGreaterThanOrEqual(90);
      await expect(held).rejects.toMatchObject({ name: 'TimeoutError' });
      expect(simulator.video.get(id)?.queries).toBe(1);
    });
  });

  describe('board', () => {
    it('lists tasks in creation order, by vendor, and forgets them on reset', async () => {
      const first = await submitC();
      const second = await submitB();
      const third = await submitC();

      expect(simulator.video.list().map((task) => task.id)).toEqual([first, second, third]);
      expect(simulator.video.list('vendor-c').map((task) => task.id)).toEqual([first, third]);
      expect(simulator.video.list('vendor-b').map((task) => task.id)).toEqual([second]);
      expect(simulator.video.last()?.id).toBe(third);
      expect(simulator.video.get('vc-nothing')).toBeUndefined();
      simulator.reset();
      expect(simulator.video.list()).toEqual([]);
      expect(simulator.video.last()).toBeUndefined();
    });

    it('throws when a test moves an unknown task', () => {
      expect(() => simulator.video.setStatus('vc-nothing', 'running')).toThrow('No simulated video task vc-nothing');
      expect(() => simulator.video.succeed('vc-nothing')).toThrow('No simulated video task vc-nothing');
    });

    it('clears usage and error when a task moves on', async () => {
      const id = await submitC();
      simulator.video.setStatus(id, 'failed');
      simulator.video.succeed(id);
      expect(simulator.video.get(id)).toMatchObject({ status: 'succeeded', error: undefined, usage: expect.any(Object) });
      simulator.video.setStatus(id, 'running');
      expect(simulator.video.get(id)).toMatchObject({ status: 'running', error: undefined, usage: undefined });
    });
  });

  describe('default usage', () => {
    it('vendor-c: output seconds from duration (6 by default), input seconds of videos, count of images', async () => {
      const rich = await submitC({
        model: 'video-c-1',
        duration: 10,
        content: [
          { type: 'text', text: 'continue these' },
          { type: 'image_url', image_url: { url: 'https://example.invalid/a.png' } },
          { type: 'image_url', image_url: { url: 'https://example.invalid/b.png' } },
          { type: 'video_url', video_url: { url: 'https://example.invalid/a.mp4' }, duration: 4 },
          { type: 'video_url', video_url: { url: 'https://example.invalid/b.mp4', duration: 3 } },
        ],
      });
      const bare = await submitC({ model: 'video-c-1', prompt: 'a cat' });
      simulator.video.succeed(rich);
      simulator.video.succeed(bare);

      const usageOf = async (id: string) => (await call('GET', `${C_QUERY}/${id}`)).json.task.usage;
      expect(await usageOf(rich)).toEqual({ output_seconds: 10, input_seconds: 4 + 3, input_image_count: 2 });
      expect(await usageOf(bare)).toEqual({ output_seconds: 6, input_seconds: 0, input_image_count: 0 });
    });

    it.each([
      [{}, 108000], // 1280 x 720, 5 s
      [{ resolution: '1080p', duration: 10 }, 486000], // 1920 x 1080
      [{ resolution: '480p', duration: 4 }, 38385], // 853 x 480
    ])('vendor-b %j: round(W * H * 24 * duration / 1024) = %d tokens', async (fields, tokens) => {
      const id = await submitB({ model: 'video-b-1', content: [], ...fields });
      simulator.video.succeed(id);

      expect((await call('GET', `${B_TASKS}/${id}`)).json.usage).toEqual({ completion_tokens: tokens, total_tokens: tokens });
      expect(defaultUsage({ vendor: 'vendor-b', body: fields })).toEqual({ completion_tokens: tokens, total_tokens: tokens });
    });
  });
});

describe('VideoTaskBoard auto-advance', () => {
  it('moves untouched tasks by the clock and leaves explicitly moved ones alone', () => {
    let now = 1_000_000;
    const board = new VideoTaskBoard(1000, () => now);
    const untouched = board.create('vendor-c', { model: 'video-c-1', duration: 8 });
    const held = board.create('vendor-c', { model: 'video-c-1' });
    const cancelled = board.create('vendor-b', { model: 'video-b-1' });
    board.setStatus(held.id, 'queued');
    board.cancel(cancelled);

    now += 999;
    expect(board.get(untouched.id)?.status).toBe('queued');
    now += 1;
    expect(board.get(untouched.id)).toMatchObject({ status: 'running', updatedAt: 1_001_000 });
    now += 1000;
    expect(board.get(untouched.id)).toMatchObject({
      status: 'succeeded',
      updatedAt: 1_002_000,
      usage: { output_seconds: 8, input_seconds: 0, input_image_count: 0 },
    });
    expect(board.get(held.id)?.status).toBe('queued');
    expect(board.get(cancelled.id)?.status).toBe('cancelled');
  });

  it('keeps tasks queued without a step', () => {
    let now = 0;
    const board = new VideoTaskBoard(undefined, () => now);
    const task = board.create('vendor-b', { model: 'video-b-1' });
    now += 1_000_000;
    expect(board.get(task.id)?.status).toBe('queued');
  });

  it('is what a simulator with videoAutoAdvanceMs reports over HTTP', async () => {
    const simulator = new UpstreamSimulator({ videoAutoAdvanceMs: 100 });
    const baseUrl = await simulator.start();
    const get = async (id: string) => (await (await fetch(`${baseUrl}${B_TASKS}/${id}`)).json()) as Record<string, unknown>;
    try {
      const submit = await fetch(`${baseUrl}${B_TASKS}`, { method: 'POST', body: JSON.stringify({ model: 'video-b-1', content: [] }) });
      const { id } = (await submit.json()) as { id: string };
      const createdAt = simulator.video.get(id)!.createdAt;

      // Exact transitions are the injected-clock tests' job; over HTTP only what waiting guarantees.
      await sleep(createdAt + 130 - Date.now());
      const refused = await fetch(`${baseUrl}${B_TASKS}/${id}`, { method: 'DELETE' });
      expect(refused.status).toBe(400);
      await sleep(createdAt + 230 - Date.now());
      expect(await get(id)).toMatchObject({ status: 'succeeded', usage: { completion_tokens: 108000, total_tokens: 108000 } });
    } finally {
      await simulator.stop();
    }
  });
});
