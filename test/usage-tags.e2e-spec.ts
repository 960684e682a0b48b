import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { Agent, fetch as undiciFetch } from 'undici';
import { nanoToDecimal } from '../src/config/money';
import { type Answer, httpCall } from './support/admin-kit';
import { GatewayHarness } from './support/gateway-harness';
import { IMAGE_PATHS } from './support/images-kit';
import { oneModelPerInterfaceYaml } from './support/test-config';
import { taskRow, VENDOR_C } from './support/video-kit';

/**
 * Tags and end users for chargeback: `X-Gateway-Tags` on any model entry and the body's end-user
 * member (`user`; messages: `metadata.user_id`) are kept on the call's usage record, filtered on
 * and summed per tag by the admin API. A bad header is a 400 in the called entry's own error
 * shape, before anything is forwarded or recorded, and the header never reaches the upstream.
 * The clients are the official SDKs, passing the header as a per-request option.
 */

const KEY = 'gk-usage-tags-0001';
const OWNER = 'team-tags';
const TAGS_HEADER = 'X-Gateway-Tags';

function configYaml(simulator: string): string {
  return oneModelPerInterfaceYaml(
    simulator,
    `
owners:
  - { id: ${OWNER}, kind: project }
keys:
  - { key: ${KEY}, owner: ${OWNER}, models: ["*"] }
`,
  );
}

/** The SDK clients, on a connection pool of their own that the suite closes before the gateway stops. */
class Clients {
  private readonly pool = new Agent();
  private readonly fetch = undiciFetch as unknown as typeof fetch;

  openai(gateway: GatewayHarness): OpenAI {
    return new OpenAI({
      baseURL: `${gateway.url}/v1`,
      apiKey: KEY,
      maxRetries: 0,
      timeout: 20_000,
      fetch: this.fetch,
      fetchOptions: { dispatcher: this.pool },
    });
  }

  anthropic(gateway: GatewayHarness): Anthropic {
    return new Anthropic({ baseURL: gateway.url, apiKey: KEY, maxRetries: 0, timeout: 20_000, fetch: this.fetch, fetchOptions: { dispatcher: this.pool } });
  }

  close(): Promise<void> {
    return this.pool.destroy();
  }
}

/** The error a call was refused with; fails when the call was answered. */
async function refusal<T>(call: Promise<unknown>, errorClass: abstract new (...args: any[]) => T): Promise<T> {
  const outcome = await call.then(
    () => new Error('the call was answered'),
    (error: unknown) => error,
  );
  expect(outcome).toBeInstanceOf(errorClass);
  return outcome as T;
}

const eleven = Array.from({ length: 11 }, (_, index) => `tag-${index}`).join(',');
const longTag = `t${'x'.repeat(64)}`;

interface RecordView {
  request_id: string;
  model: string;
  interface: string;
  status: number;
  tags: string[];
  end_user: string | null;
  cost_nano: string;
  usage: Record<string, number> | null;
}

interface DailyTagRow {
  day: string;
  model: string;
  tag: string | null;
  calls: number;
  failed_calls: number;
  cost: number;
  cost_nano: string;
  usage: Record<string, number>;
}

describe('tags and end users on usage records', () => {
  const clients = new Clients();
  let gateway: GatewayHarness;
  let openai: OpenAI;
  let anthropic: Anthropic;
  const admin = (path: string): Promise<Answer> => httpCall(gateway.url, 'GET', path);
  const record = async (requestId: string): Promise<RecordView> => {
    const answer = await admin(`/admin/usage/${encodeURIComponent(requestId)}`);
    expect(answer.status).toBe(200);
    return answer.body;
  };
  /** Request ids of every listed record of the suite's owner matching `query`, newest first. */
  const listed = async (query: string): Promise<string[]> => {
    await gateway.flushUsage();
    const answer = await admin(`/admin/usage?owner=${OWNER}&limit=1000&${query}`);
    expect(answer.status).toBe(200);
    return answer.body.data.map((row: RecordView) => row.request_id);
  };
  /** The simulator's last request: what the upstream received. */
  const lastUpstream = () => gateway.simulator.requests[gateway.simulator.requests.length - 1]!;

  /** Request ids of the calls made in beforeAll, by name. */
  const calls: Record<string, string> = {};

  beforeAll(async () => {
    gateway = await GatewayHarness.start({ configYaml });
    openai = clients.openai(gateway);
    anthropic = clients.anthropic(gateway);
  });

  afterAll(async () => {
    await clients.close();
    await gateway?.stop();
  });

  beforeEach(() => gateway.simulator.reset());

  describe('what a call carries', () => {
    it('keeps the tags (each once, in order) and `user` of an openai chat call, and the upstream gets neither the header nor another body', async () => {
      const body = { model: 'chat-model', messages: [{ role: 'user' as const, content: 'Tag me' }], user: 'user-42' };
      const { request_id: requestId } = await openai.chat.completions
        .create(body, { headers: { [TAGS_HEADER]: 'app:search, env:prod,app:search' } })
        .withResponse();
      calls.chatTagged = requestId!;

      const upstream = lastUpstream();
      expect(Object.keys(upstream.headers)).not.toContain('x-gateway-tags');
      expect(JSON.stringify(upstream.headers)).not.toContain('app:search');
      expect(upstream.json).toEqual({ ...body, model: 'vendor-chat-2025-01' });

      expect(await record(requestId!)).toMatchObject({ tags: ['app:search', 'env:prod'], end_user: 'user-42', status: 200 });
      await gateway.flushUsage();
      expect(await gateway.usageRecord(requestId!)).toMatchObject({ tags: ['app:search', 'env:prod'], endUser: 'user-42' });
    });

    it('keeps the tags and `metadata.user_id` of an anthropic messages call, native and translated', async () => {
      const options = { headers: { [TAGS_HEADER]: 'app:support,NULL' } };
      const message = (model: string) =>
        anthropic.messages
          .create({ model, max_tokens: 64, messages: [{ role: 'user', content: 'Tag me' }], metadata: { user_id: 'user-7' } }, options)
          .withResponse();

      const native = await message('messages-model');
      calls.messagesTagged = native.request_id!;
      expect(Object.keys(lastUpstream().headers)).not.toContain('x-gateway-tags');
      expect((lastUpstream().json as { metadata: unknown }).metadata).toEqual({ user_id: 'user-7' });
      // A tag spelled NULL is a tag, not a missing one, on the way through COPY's array literal.
      expect(await record(native.request_id!)).toMatchObject({ interface: 'messages', tags: ['app:support', 'NULL'], end_user: 'user-7' });

      const translated = await message('chat-model');
      calls.messagesTranslated = translated.request_id!;
      expect(Object.keys(lastUpstream().headers)).not.toContain('x-gateway-tags');
      await gateway.flushUsage();
      expect(await record(translated.request_id!)).toMatchObject({ interface: 'messages', tags: ['app:support', 'NULL'], end_user: 'user-7' });
    });

    it('keeps them on a streamed call, on responses and embeddings calls, and gives none to a call without them', async () => {
      const headers = { [TAGS_HEADER]: 'app:search' };
      const stream = await openai.chat.completions
        .create({ model: 'chat-model', messages: [{ role: 'user', content: 'Stream me' }], stream: true, user: 'user-42' }, { headers })
        .withResponse();
      for await (const _chunk of stream.data) void _chunk;
      calls.chatStream = stream.request_id!;
      const responses = await openai.responses
        .create({ model: 'chat-model', input: 'Respond', user: 'user-9' }, { headers: { [TAGS_HEADER]: 'env:prod' } })
        .withResponse();
      calls.responses = responses.request_id!;
      const embeddings = await openai.embeddings.create({ model: 'embed-model', input: 'vector', user: 'user-42' }, { headers }).withResponse();
      calls.embeddings = embeddings.request_id!;
      const plain = await openai.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'Plain' }] }).withResponse();
      calls.plain = plain.request_id!;
      const emptyHeader = await openai.chat.completions
        .create({ model: 'chat-model', messages: [{ role: 'user', content: 'Empty' }] }, { headers: { [TAGS_HEADER]: '' } })
        .withResponse();
      calls.emptyHeader = emptyHeader.request_id!;
      await gateway.flushUsage();

      expect(await record(calls.chatStream)).toMatchObject({ tags: ['app:search'], end_user: 'user-42' });
      expect(await record(calls.responses)).toMatchObject({ interface: 'responses', tags: ['env:prod'], end_user: 'user-9' });
      expect(await record(calls.embeddings)).toMatchObject({ interface: 'embeddings', tags: ['app:search'], end_user: 'user-42' });
      expect(await record(calls.plain)).toMatchObject({ tags: [], end_user: null });
      expect(await record(calls.emptyHeader)).toMatchObject({ tags: [], end_user: null });
      expect(await gateway.usageRecord(calls.plain)).toMatchObject({ tags: null, endUser: null });
    });

    it('keeps the tags of the image, speech and format C entries, and `user` of an image generation', async () => {
      const images = await openai.images
        .generate({ model: 'image-a', prompt: 'A red fox', user: 'user-img' }, { headers: { [TAGS_HEADER]: 'app:art' } })
        .withResponse();
      calls.imageA = images.request_id!;
      const post = async (name: string, path: string, body: unknown) => {
        const answer = await httpCall(gateway.url, 'POST', path, body, { authorization: `Bearer ${KEY}`, [TAGS_HEADER]: 'app:art' });
        expect({ name, status: answer.status }).toEqual({ name, status: 200 });
        expect(Object.keys(lastUpstream().headers)).not.toContain('x-gateway-tags');
        calls[name] = answer.headers.get('x-request-id')!;
      };
      await post('imageB', IMAGE_PATHS.vendorB, { model: 'image-b', prompt: 'A red fox', size: '1K' });
      await post('imageC', IMAGE_PATHS.generateContent('image-c'), {
        contents: [{ role: 'user', parts: [{ text: 'A red fox' }] }],
        generationConfig: { responseModalities: ['TEXT', 'IMAGE'] },
      });
      await post('speech', IMAGE_PATHS.speech, { model: 'speech', text: 'Hello there', stream: false });
      await gateway.flushUsage();

      expect(await record(calls.imageA)).toMatchObject({ interface: 'images_a', tags: ['app:art'], end_user: 'user-img' });
      for (const name of ['imageB', 'imageC', 'speech'])
        expect({ name, ...(await record(calls[name])) }).toMatchObject({ name, tags: ['app:art'], end_user: null });
    });

    it("writes a video task's tags on the record made when the task settles", async () => {
      const submit = await httpCall(
        gateway.url,
        'POST',
        VENDOR_C.submit,
        { model: 'video-c', duration: 6, resolution: '720p', content: [{ type: 'text', text: 'a paper boat' }] },
        { authorization: `Bearer ${KEY}`, [TAGS_HEADER]: 'app:video,env:prod' },
      );
      expect(submit.status).toBe(200);
      expect(Object.keys(lastUpstream().headers)).not.toContain('x-gateway-tags');
      const taskId: string = submit.body.task_id;
      calls.video = submit.headers.get('x-request-id')!;
      const task = await taskRow(gateway, taskId);
      expect(task).toMatchObject({ tags: ['app:video', 'env:prod'], end_user: null });

      gateway.simulator.video.succeed(task.upstream_task_id, { output_seconds: 6 });
      const query = await httpCall(gateway.url, 'GET', VENDOR_C.query(taskId), undefined, { authorization: `Bearer ${KEY}` });
      expect(query.status).toBe(200);
      expect(await record(calls.video)).toMatchObject({ interface: 'video_c', tags: ['app:video', 'env:prod'], end_user: null });
    });
  });

  describe('a bad X-Gateway-Tags header', () => {
    /** Nothing went upstream and nothing was recorded for the refused call. */
    async function expectNotForwarded(requestId: string | null | undefined): Promise<void> {
      expect(gateway.simulator.requests).toHaveLength(0);
      expect(requestId).toEqual(expect.any(String));
      await gateway.flushUsage();
      expect((await admin(`/admin/usage/${encodeURIComponent(requestId!)}`)).status).toBe(404);
    }

    const chat = (header: string) =>
      openai.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'Refuse me' }] }, { headers: { [TAGS_HEADER]: header } });

    it('refuses 11 tags with 400 in the openai shape, forwarding and recording nothing', async () => {
      const refused = await refusal(chat(eleven), OpenAI.BadRequestError);
      expect(refused.status).toBe(400);
      expect(refused.error).toEqual({ message: 'X-Gateway-Tags: 11 different tags; at most 10 are allowed.', type: 'invalid_request_error', code: null });
      await expectNotForwarded(refused.requestID);
    });

    it('refuses 11 tags with 400 in the anthropic shape, forwarding and recording nothing', async () => {
      const refused = await refusal(
        anthropic.messages.create(
          { model: 'messages-model', max_tokens: 64, messages: [{ role: 'user', content: 'Refuse me' }] },
          { headers: { [TAGS_HEADER]: eleven } },
        ),
        Anthropic.BadRequestError,
      );
      expect(refused.status).toBe(400);
      expect(refused.error).toEqual({
        type: 'error',
        error: { type: 'invalid_request_error', message: 'X-Gateway-Tags: 11 different tags; at most 10 are allowed.', code: null },
      });
      await expectNotForwarded(refused.requestID);
    });

    it('refuses a tag of 65 characters, naming it', async () => {
      const refused = await refusal(chat(`app:search,${longTag}`), OpenAI.BadRequestError);
      expect(refused.status).toBe(400);
      expect(refused.message).toContain(`X-Gateway-Tags: tag "${longTag}" has 65 characters; at most 64 are allowed.`);
      await expectNotForwarded(refused.requestID);
    });

    it('refuses a character outside the tag alphabet, naming the tag and the character', async () => {
      const refused = await refusal(chat('app:search,team/a'), OpenAI.BadRequestError);
      expect(refused.status).toBe(400);
      expect((refused.error as { message: string }).message).toBe(
        'X-Gateway-Tags: tag "team/a" has the character "/"; a tag may have only A-Z, a-z, 0-9 and . _ : -',
      );
      await expectNotForwarded(refused.requestID);
    });

    it('refuses it on the other entries too, each in its own shape', async () => {
      const headers = { authorization: `Bearer ${KEY}`, [TAGS_HEADER]: 'a,,b' };
      const speech = await httpCall(gateway.url, 'POST', IMAGE_PATHS.speech, { model: 'speech', text: 'Hello', stream: false }, headers);
      expect(speech.status).toBe(400);
      expect(speech.body.base_resp).toEqual({ status_code: 2013, status_msg: 'X-Gateway-Tags: tag 2 is empty (tags are separated by single commas).' });
      const generateContent = await httpCall(gateway.url, 'POST', IMAGE_PATHS.generateContent('image-c'), { contents: [] }, headers);
      expect(generateContent.status).toBe(400);
      expect(generateContent.body.error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT' });
      const video = await httpCall(gateway.url, 'POST', VENDOR_C.submit, { model: 'video-c', content: [{ type: 'text', text: 'x' }] }, headers);
      expect(video.status).toBe(400);
      expect(await gateway.dataSource.query(`SELECT id FROM video_task WHERE submit_request_id = $1`, [video.headers.get('x-request-id')])).toEqual([]);
      expect(gateway.simulator.requests).toHaveLength(0);
    });
  });

  describe('the admin API', () => {
    it('lists exactly the records carrying a tag, every one of repeated tags, and an end user', async () => {
      expect(new Set(await listed('tag=app:search'))).toEqual(new Set([calls.chatTagged, calls.chatStream, calls.embeddings]));
      expect(new Set(await listed('tag=env:prod'))).toEqual(new Set([calls.chatTagged, calls.responses, calls.video]));
      expect(await listed('tag=app:search&tag=env:prod')).toEqual([calls.chatTagged]);
      expect(await listed('tag=NULL')).toEqual([calls.messagesTranslated, calls.messagesTagged]);
      expect(await listed('tag=nobody')).toEqual([]);
      expect(new Set(await listed('end_user=user-42'))).toEqual(new Set([calls.chatTagged, calls.chatStream, calls.embeddings]));
      expect(await listed('end_user=user-7&tag=app:support')).toEqual([calls.messagesTranslated, calls.messagesTagged]);
      expect(await listed('end_user=user-42&tag=env:prod')).toEqual([calls.chatTagged]);
    });

    it('refuses a tag filter that is no tag, and too many of them', async () => {
      const bad = await admin('/admin/usage?tag=a%2Fb');
      expect(bad.status).toBe(400);
      expect(bad.body.error.message).toMatch(/^tag: must be a tag/);
      const many = await admin(`/admin/usage?${Array.from({ length: 11 }, (_, index) => `tag=t${index}`).join('&')}`);
      expect(many.status).toBe(400);
      expect(many.body.error.message).toMatch(/^tag: /);
    });

    it('sums each day per model and tag, a record under each of its tags and one without tags under null', async () => {
      await gateway.flushUsage();
      const records: RecordView[] = (await admin(`/admin/usage?owner=${OWNER}&limit=1000`)).body.data;
      expect(records.length).toBeGreaterThan(10);
      const today = new Date().toISOString().slice(0, 10);
      const expected = new Map<string, DailyTagRow & { nano: bigint }>();
      for (const row of records) {
        for (const tag of row.tags.length > 0 ? row.tags : [null]) {
          const key = `${row.model}|${tag}`;
          const total = expected.get(key) ?? { day: today, model: row.model, tag, calls: 0, failed_calls: 0, cost: 0, cost_nano: '', usage: {}, nano: 0n };
          total.calls += 1;
          total.failed_calls += row.status >= 400 ? 1 : 0;
          total.nano += BigInt(row.cost_nano);
          for (const [figure, amount] of Object.entries(row.usage ?? {})) total.usage[figure] = (total.usage[figure] ?? 0) + amount;
          expected.set(key, total);
        }
      }
      const rows = [...expected.values()].map(({ nano, ...total }) => ({ ...total, cost: Number(nanoToDecimal(nano)), cost_nano: nano.toString() }));

      const answer = await admin(`/admin/usage/daily?from=${today}&to=${today}&owner=${OWNER}&group_by=tag`);
      expect(answer.status).toBe(200);
      const byKey = (row: DailyTagRow) => `${row.model}|${row.tag}`;
      expect([...answer.body.data].sort((a, b) => byKey(a).localeCompare(byKey(b)))).toEqual(rows.sort((a, b) => byKey(a).localeCompare(byKey(b))));
      const chatSearch = answer.body.data.find((row: DailyTagRow) => row.model === 'chat-model' && row.tag === 'app:search');
      expect(chatSearch.calls).toBe(2);
      expect(answer.body.data.some((row: DailyTagRow) => row.tag === null)).toBe(true);
    });

    it('keeps group_by=tag to a month of days', async () => {
      const answer = await admin('/admin/usage/daily?from=2026-01-01&to=2026-02-01&group_by=tag');
      expect(answer.status).toBe(400);
      expect(answer.body.error.message).toBe('to: group_by=tag covers at most 31 days, from and to included');
      expect((await admin('/admin/usage/daily?from=2026-01-01&to=2026-01-31&group_by=tag')).status).toBe(200);
    });
  });
});
