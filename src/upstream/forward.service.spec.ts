import { errors } from 'undici';
import { Clock } from '../common/clock';
import type { ModelConfig, UpstreamConfig } from '../config/gateway-config';
import type { LineSettings } from '../config/settings/upstream.settings';
import { AnswerBody } from './answer-body';
import { CallAbort } from './call-abort';
import { AttemptNote, ForwardRequest, ForwardService } from './forward.service';
import { LineRegistry, Line } from './line-registry';
import type { UpstreamClient, UpstreamRequest, UpstreamResponse } from './upstream-client';

/** What a fake line answers: a status (with headers), or an error thrown as undici throws it. */
type Answer = { status: number; headers?: Record<string, string> } | Error;

const refused = (): Error => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' });

const LINE_IDS = ['line-a', 'line-b', 'line-c'];

function upstream(id: string): UpstreamConfig {
  return { id, baseUrl: 'http://127.0.0.1:9', apiKey: `key-${id}`, timeoutMs: 1_000 };
}

function model(fields: Partial<ModelConfig> = {}): ModelConfig {
  return {
    id: 'chat-model',
    upstreamModel: 'vendor-model',
    interfaces: ['chat_completions'],
    lines: ['line-a'],
    capabilities: { imageInput: false },
    prices: {},
    priceTiers: [],
    ...fields,
  };
}

const SETTINGS: LineSettings = {
  cooldownMs: 10_000,
  rateLimitCooldownMaxMs: 60_000,
  connections: 4,
  retry: { attempts: 0, backoffMs: 0, maxBackoffMs: 5_000 },
};

describe(ForwardService.name, () => {
  let registry: LineRegistry;
  /** Each line's answers, taken in order; the last repeats. */
  let answers: Record<string, Answer[]>;
  /** Every request sent, with its line. */
  let sent: Array<{ line: string; request: UpstreamRequest }>;

  function service(settings: Partial<LineSettings> = {}): ForwardService {
    registry = new LineRegistry({ upstreams: LINE_IDS.map(upstream), models: [], owners: [], keys: [] }, { ...SETTINGS, ...settings }, new Clock());
    const client = {
      send: (line: Line, request: UpstreamRequest): Promise<UpstreamResponse> => {
        sent.push({ line: line.id, request });
        const queue = answers[line.id] ?? [{ status: 200 }];
        const answer = queue.length > 1 ? queue.shift()! : queue[0];
        if (answer instanceof Error) return Promise.reject(answer);
        return Promise.resolve({ statusCode: answer.status, headers: answer.headers ?? {}, body: AnswerBody.of(Buffer.from(`{"from":"${line.id}"}`)) });
      },
    } as unknown as UpstreamClient;
    return new ForwardService(registry, client, new Clock(), { ...SETTINGS, ...settings });
  }

  function request(forModel: Partial<ModelConfig>, fields: Partial<ForwardRequest> = {}): ForwardRequest & { attempts: AttemptNote[] } {
    return {
      entry: 'chat_completions',
      model: model(forModel),
      path: '/v1/chat/completions',
      body: Buffer.from('{"model":"vendor-model"}'),
      incomingHeaders: {},
      signal: new CallAbort(),
      attempts: [],
      ...fields,
    };
  }

  beforeEach(() => {
    answers = {};
    sent = [];
  });

  afterEach(() => registry.onModuleDestroy());

  describe('weighted lines', () => {
    it('draws the first line by weight, then fails over through the others in their listed order', async () => {
      const forward = service();
      const weights = { lines: ['line-a', 'line-b', 'line-c'], lineWeights: [1, 3, 0] };
      answers = { 'line-a': [{ status: 503 }], 'line-b': [{ status: 503 }], 'line-c': [{ status: 200 }] };
      // 0.3 × 4 = 1.2 falls past line-a's weight of 1 into line-b's.
      forward.random = () => 0.3;
      const call = request(weights);
      await forward.open(call);
      expect(call.attempts.map((attempt) => attempt.line)).toEqual(['line-b', 'line-a', 'line-c']);

      sent = [];
      forward.random = () => 0.2;
      await forward.open(request(weights));
      expect(sent.map((each) => each.line)).toEqual(['line-a', 'line-b', 'line-c']);
    });

    it('spreads first attempts 3:1 over 400 calls (within 15 points of 75 %), never first to a line of weight 0', async () => {
      const forward = service();
      const firsts: Record<string, number> = {};
      for (let index = 0; index < 400; index++) {
        const opened = await forward.open(request({ lines: ['line-a', 'line-b', 'line-c'], lineWeights: [3, 1, 0] }));
        firsts[opened.line.id] = (firsts[opened.line.id] ?? 0) + 1;
        opened.done();
      }
      expect(firsts['line-a']).toBeGreaterThanOrEqual(240);
      expect(firsts['line-a']).toBeLessThanOrEqual(360);
      expect(firsts['line-a'] + firsts['line-b']).toBe(400);
      expect(firsts['line-c']).toBeUndefined();
    });

    it('draws among the lines that can take the call: a cooling line of large weight is not drawn', async () => {
      const forward = service();
      registry.coolDown(registry.get('line-a'));
      for (let index = 0; index < 20; index++) {
        forward.random = () => index / 20;
        const opened = await forward.open(request({ lines: ['line-a', 'line-b', 'line-c'], lineWeights: [100, 1, 1] }));
        expect(opened.line.id).not.toBe('line-a');
      }
    });
  });

  describe("a line's own upstream model", () => {
    it("goes to that line with the path and body built for it; other lines get the model's", async () => {
      const forward = service();
      answers = { 'line-a': [{ status: 500 }] };
      const forModel = jest.fn((upstreamModel: string) => ({ path: `/v1/${upstreamModel}`, body: Buffer.from(`{"model":"${upstreamModel}"}`) }));
      const opened = await forward.open(request({ lines: ['line-a', 'line-b'], lineModels: { 'line-b': 'deployment-b' } }, { forModel }));

      expect(sent.map(({ line, request }) => [line, request.path, String(request.body)])).toEqual([
        ['line-a', '/v1/chat/completions', '{"model":"vendor-model"}'],
        ['line-b', '/v1/deployment-b', '{"model":"deployment-b"}'],
      ]);
      expect(opened.upstreamModel).toBe('deployment-b');
      expect(forModel).toHaveBeenCalledTimes(1);
    });
  });

  describe('retries', () => {
    it('sends a call whose only line answered 5xx again after the back-off, and notes each attempt', async () => {
      const forward = service();
      answers = { 'line-a': [{ status: 503 }, { status: 502 }, { status: 200 }] };
      const call = request({ retry: { attempts: 2, backoffMs: 1, maxBackoffMs: 10 } });
      const opened = await forward.open(call);

      expect(opened.statusCode).toBe(200);
      expect(call.attempts.map(({ line, outcome, status }) => [line, outcome, status])).toEqual([
        ['line-a', '5xx', 503],
        ['line-a', '5xx', 502],
        ['line-a', 'answered', 200],
      ]);
      expect(registry.get('line-a').failovers['5xx']).toBe(2);
    });

    it('gives the client the last answer as it came once the retries are spent', async () => {
      const forward = service();
      answers = { 'line-a': [{ status: 503 }] };
      const call = request({ retry: { attempts: 2, backoffMs: 1, maxBackoffMs: 10 } });
      const opened = await forward.open(call);
      expect(opened.statusCode).toBe(503);
      expect(await opened.body.whole()).toEqual(Buffer.from('{"from":"line-a"}'));
      expect(call.attempts).toHaveLength(3);
    });

    it('retries a reset connection too, but not an answer that is not a failure (400)', async () => {
      const forward = service();
      answers = { 'line-a': [new errors.SocketError('other side closed'), { status: 400 }] };
      const call = request({ retry: { attempts: 3, backoffMs: 1, maxBackoffMs: 10 } });
      expect((await forward.open(call)).statusCode).toBe(400);
      expect(call.attempts.map((attempt) => attempt.outcome)).toEqual(['reset', 'answered']);
    });

    it("does not retry a line that refused the gateway's credentials", async () => {
      const forward = service();
      answers = { 'line-a': [{ status: 401 }, { status: 200 }] };
      const call = request({ retry: { attempts: 3, backoffMs: 1, maxBackoffMs: 10 } });
      await expect(forward.open(call)).rejects.toMatchObject({ failure: 'credentials' });
      expect(sent).toHaveLength(1);
    });

    it("waits at least what the upstream's Retry-After-Ms asks", async () => {
      const forward = service();
      answers = { 'line-a': [{ status: 429, headers: { 'retry-after-ms': '120' } }, { status: 200 }] };
      const call = request({ retry: { attempts: 1, backoffMs: 1, maxBackoffMs: 1_000 } });
      await forward.open(call);
      expect(call.attempts[1].startedAt - call.attempts[0].endedAt).toBeGreaterThanOrEqual(119);
    });

    it('does not retry when Retry-After asks for longer than max_backoff_ms: the 429 goes to the client now', async () => {
      const forward = service();
      answers = { 'line-a': [{ status: 429, headers: { 'retry-after': '30' } }, { status: 200 }] };
      const call = request({ retry: { attempts: 3, backoffMs: 1, maxBackoffMs: 2_000 } });
      expect((await forward.open(call)).statusCode).toBe(429);
      expect(sent).toHaveLength(1);
    });

    it('fails over at once and retries only after every line failed', async () => {
      const forward = service();
      answers = { 'line-a': [{ status: 500 }, { status: 200 }], 'line-b': [{ status: 500 }] };
      const call = request({ lines: ['line-a', 'line-b'], retry: { attempts: 1, backoffMs: 1, maxBackoffMs: 10 } });
      await forward.open(call);
      expect(call.attempts.map((attempt) => [attempt.line, attempt.status])).toEqual([
        ['line-a', 500],
        ['line-b', 500],
        ['line-a', 200],
      ]);
    });

    it('takes the RETRY_* defaults for a model without retry, and its own fields over them', async () => {
      const forward = service({ retry: { attempts: 1, backoffMs: 1, maxBackoffMs: 10 } });
      answers = { 'line-a': [{ status: 503 }] };
      const call = request({});
      await forward.open(call);
      expect(call.attempts).toHaveLength(2);

      const none = request({ retry: { attempts: 0 } });
      await forward.open(none);
      expect(none.attempts).toHaveLength(1);
    });

    it('never sends again a call that must reach the vendor at most once (a video submit)', async () => {
      const forward = service();
      answers = { 'line-a': [{ status: 503 }, { status: 200 }] };
      const call = request({ retry: { attempts: 3, backoffMs: 1, maxBackoffMs: 10 } }, { mayRetry: false });
      expect((await forward.open(call)).statusCode).toBe(503);
      expect(sent).toHaveLength(1);
    });

    it('stops waiting when the client leaves during the back-off', async () => {
      const forward = service();
      answers = { 'line-a': [{ status: 503 }, { status: 200 }] };
      const signal = new CallAbort();
      const call = request({ retry: { attempts: 1, backoffMs: 60_000, maxBackoffMs: 60_000 } }, { signal });
      forward.random = () => 0.99;
      const opening = forward.open(call);
      setTimeout(() => signal.abort(), 20);
      const opened = await opening;
      // The client is gone: the 503 it would have had ends the call, nothing is sent again.
      expect(opened.statusCode).toBe(503);
      expect(sent).toHaveLength(1);
    });

    it('retries a refused connection after the back-off, though the line cools down for other calls', async () => {
      const forward = service();
      answers = { 'line-a': [refused(), { status: 200 }] };
      const call = request({ retry: { attempts: 2, backoffMs: 1, maxBackoffMs: 10 } });
      expect((await forward.open(call)).statusCode).toBe(200);
      expect(call.attempts.map((attempt) => attempt.outcome)).toEqual(['refused', 'answered']);
      // Another call meets the cooling line and is answered 503 at once, without an attempt.
      const other = request({});
      await expect(forward.open(other)).rejects.toMatchObject({ code: 'service_unavailable' });
      expect(other.attempts).toEqual([]);
    });

    it('gives the refused connection to the client once the retries are spent', async () => {
      const forward = service();
      answers = { 'line-a': [refused()], 'line-b': [refused()] };
      const call = request({ lines: ['line-a', 'line-b'], retry: { attempts: 1, backoffMs: 1, maxBackoffMs: 10 } });
      await expect(forward.open(call)).rejects.toMatchObject({ failure: 'refused', code: 'upstream_failed' });
      expect(call.attempts.map((attempt) => [attempt.line, attempt.outcome])).toEqual([
        ['line-a', 'refused'],
        ['line-b', 'refused'],
        ['line-a', 'refused'],
        ['line-b', 'refused'],
      ]);
    });

    it('does not retry a timeout: the call may have reached the vendor', async () => {
      const forward = service();
      answers = { 'line-a': [new errors.HeadersTimeoutError(), { status: 200 }] };
      const call = request({ retry: { attempts: 2, backoffMs: 1, maxBackoffMs: 10 } });
      await expect(forward.open(call)).rejects.toMatchObject({ failure: 'timeout' });
      expect(sent).toHaveLength(1);
    });

    it('keeps a line another call found refusing out of a retry: only the lines that refused this call come back', async () => {
      const forward = service();
      registry.coolDown(registry.get('line-b'));
      answers = { 'line-a': [refused(), { status: 200 }], 'line-b': [{ status: 200 }] };
      const call = request({ lines: ['line-a', 'line-b'], retry: { attempts: 1, backoffMs: 1, maxBackoffMs: 10 } });
      expect((await forward.open(call)).line.id).toBe('line-a');
      expect(sent.map((each) => each.line)).toEqual(['line-a', 'line-a']);
    });
  });
});
