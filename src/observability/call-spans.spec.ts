import type { FastifyRequest } from 'fastify';
import type { ModelConfig } from '../config/gateway-config';
import type { AdmittedCall, ForwardedState } from '../forwarding/request-state';
import type { CallFacts } from './call-facts';
import { callSpansOf, LineAddress, operationOf, providerOf, SpanPlan, usageAttributeOf } from './call-spans';
import { callFacts } from '../../test/support/call-facts';

const MODEL = { id: 'chat-model', upstreamModel: 'vendor-chat-1', lineModels: { 'line-b': 'vendor-chat-1-on-b' } } as unknown as ModelConfig;

/** Facts of a native chat call that arrived at 1000 and whose answer ended 60 ms later. */
const FACTS = callFacts({
  line: 'line-b',
  upstreamHeadersMs: 6,
  upstreamMs: 46,
  firstByteMs: 18,
  usage: { input_tokens: 3, output_tokens: 7, cached_input_tokens: 1 },
});

/** A call that went upstream at 1004: line-a answered 503 at 1010, line-b answered at 1016, the answer ended at 1050, the record at 1052. */
function forwarded(change: Partial<ForwardedState> = {}): ForwardedState {
  return {
    upstreamStartedAt: 1_004,
    attempts: [
      { line: 'line-a', outcome: '5xx', status: 503, startedAt: 1_004, endedAt: 1_010 },
      { line: 'line-b', outcome: 'answered', status: 200, startedAt: 1_010, endedAt: 1_016 },
    ],
    upstreamEndedAt: 1_050,
    settledAt: 1_052,
    responseClosed: false,
    record: {
      interface: 'chat_completions',
      line: 'line-b',
      translatedTo: null,
      status: 200,
      errorCode: null,
      usage: FACTS.usage,
      costNano: 90n,
      upstreamHeadersMs: 6,
    },
    ...change,
  };
}

function request(fields: Partial<FastifyRequest> = {}): FastifyRequest {
  return { startedAt: 1_000, call: { entry: 'chat_completions', model: MODEL } as AdmittedCall, forwarded: forwarded(), ...fields } as FastifyRequest;
}

const ADDRESSES: LineAddress = (line) => (line === 'line-a' ? { address: 'vendor-a.example', port: 443 } : undefined);

function named(spans: SpanPlan[], name: string): SpanPlan[] {
  return spans.filter((span) => span.name === name);
}

describe(callSpansOf.name, () => {
  it('makes a server span named by operation and model, with the GenAI, HTTP and gateway attributes', () => {
    const { server } = callSpansOf(request(), FACTS, ADDRESSES);

    expect(server).toEqual({
      name: 'chat chat-model',
      kind: 'server',
      startedAt: 1_000,
      endedAt: 1_060,
      attributes: {
        'http.request.method': 'POST',
        'http.route': '/v1/chat/completions',
        'http.response.status_code': 200,
        'gen_ai.operation.name': 'chat',
        'gen_ai.request.model': 'chat-model',
        'gen_ai.request.stream': false,
        'gen_ai.usage.input_tokens': 3,
        'gen_ai.usage.output_tokens': 7,
        'gen_ai.usage.cache_read.input_tokens': 1,
        'gateway.request_id': 'request-1',
        'gateway.entry': 'chat_completions',
        'gateway.key_prefix': 'gk-team-',
        'gateway.owner': 'team-a',
        'gateway.line': 'line-b',
      },
      error: undefined,
    });
  });

  it('times admission, each attempt, and metering from what the request noted', () => {
    const { children } = callSpansOf(request(), FACTS, ADDRESSES);

    expect(children.map(({ name, kind, startedAt, endedAt }) => [name, kind, startedAt, endedAt])).toEqual([
      ['admission', 'internal', 1_000, 1_004],
      ['chat vendor-chat-1', 'client', 1_004, 1_010],
      // The relayed attempt lasts until its answer was passed on.
      ['chat vendor-chat-1-on-b', 'client', 1_010, 1_050],
      ['metering', 'internal', 1_050, 1_052],
    ]);
  });

  it('names each attempt by the model the line knows, with its line, outcome, status and address; only a failed one is an error', () => {
    const [first, second] = callSpansOf(request(), FACTS, ADDRESSES).children.filter((span) => span.kind === 'client');

    expect(first!.attributes).toEqual({
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': 'vendor-chat-1',
      'gen_ai.provider.name': 'openai',
      'server.address': 'vendor-a.example',
      'server.port': 443,
      'http.response.status_code': 503,
      'gateway.line': 'line-a',
      'gateway.attempt': 1,
      'gateway.attempt.outcome': '5xx',
      'error.type': '503',
    });
    expect(first!.error).toBe('503');
    expect(second!.attributes).toMatchObject({
      'gen_ai.request.model': 'vendor-chat-1-on-b',
      'gateway.line': 'line-b',
      'gateway.attempt': 2,
      'gateway.attempt.outcome': 'answered',
      'gen_ai.usage.input_tokens': 3,
      'gen_ai.usage.output_tokens': 7,
    });
    expect(second!.attributes).not.toHaveProperty('server.address');
    expect(second!.error).toBeUndefined();
  });

  it('ends the server span with the record when the record comes after the answer', () => {
    const { server } = callSpansOf(request({ forwarded: forwarded({ upstreamEndedAt: 1_060, settledAt: 1_063 }) }), FACTS, ADDRESSES);

    expect(server.endedAt).toBe(1_063);
  });

  it("gives a translated call a translation span over the answer's relay, and its attempts the upstream protocol's operation and provider", () => {
    const facts: CallFacts = { ...FACTS, entry: 'messages', route: '/v1/messages', translatedTo: 'responses' };
    const { server, children } = callSpansOf(request(), facts, ADDRESSES);

    expect(named(children, 'translation')).toEqual([
      {
        name: 'translation',
        kind: 'internal',
        startedAt: 1_016,
        endedAt: 1_050,
        attributes: { 'gateway.translation.from': 'messages', 'gateway.translation.to': 'responses' },
      },
    ]);
    expect(children.find((span) => span.kind === 'client')!.attributes).toMatchObject({ 'gen_ai.provider.name': 'openai', 'gen_ai.operation.name': 'chat' });
    expect(server.attributes).toMatchObject({ 'gateway.translated_to': 'responses', 'gateway.entry': 'messages' });
    expect(server.attributes).not.toHaveProperty('gen_ai.provider.name');
  });

  it('gives a native call no translation span', () => {
    expect(named(callSpansOf(request(), FACTS, ADDRESSES).children, 'translation')).toEqual([]);
  });

  it('makes a request refused before admission an admission span until its answer, under an HTTP name', () => {
    const facts: CallFacts = {
      ...FACTS,
      model: null,
      line: null,
      stream: null,
      status: 401,
      errorCode: 'invalid_api_key',
      durationMs: 3,
      firstByteMs: 2,
      usage: undefined,
      entry: '/v1/chat/completions',
    };
    const { server, children } = callSpansOf(request({ call: undefined, forwarded: undefined }), facts, ADDRESSES);

    expect(server.name).toBe('POST /v1/chat/completions');
    expect(server.error).toBeUndefined();
    expect(server.attributes).not.toHaveProperty('gen_ai.operation.name');
    expect(children).toEqual([
      {
        name: 'admission',
        kind: 'internal',
        startedAt: 1_000,
        endedAt: 1_002,
        attributes: { 'gateway.admitted': false, 'gateway.error_code': 'invalid_api_key' },
        error: undefined,
      },
    ]);
  });

  it('marks a server error on the server span and each failed attempt, a refused connection by its outcome', () => {
    const failed = forwarded({
      attempts: [{ line: 'line-a', outcome: 'refused', status: null, startedAt: 1_004, endedAt: 1_005 }],
      upstreamEndedAt: 1_006,
      settledAt: 1_006,
    });
    const facts: CallFacts = { ...FACTS, status: 502, errorCode: 'upstream_failed', line: 'line-a', usage: undefined };
    const { server, children } = callSpansOf(request({ forwarded: failed }), facts, ADDRESSES);

    expect([server.error, server.attributes['error.type']]).toEqual(['upstream_failed', 'upstream_failed']);
    const attempt = children.find((span) => span.kind === 'client')!;
    expect([attempt.error, attempt.attributes['error.type'], attempt.endedAt]).toEqual(['refused', 'refused', 1_005]);
    expect(attempt.attributes).not.toHaveProperty('http.response.status_code');
  });

  it('gives a request that was neither admitted nor refused (an admin read) its server span only', () => {
    const facts: CallFacts = { ...FACTS, method: 'GET', route: '/admin/owners', entry: '/admin/owners', model: null, line: null, usage: undefined };
    const { server, children } = callSpansOf(request({ call: undefined, forwarded: undefined }), facts, ADDRESSES);

    expect(server.name).toBe('GET /admin/owners');
    expect(children).toEqual([]);
  });

  it('leaves out the metering span when no settle time was noted (every line busy: no record)', () => {
    const busy = forwarded({ attempts: [], record: undefined, settledAt: undefined });
    expect(callSpansOf(request({ forwarded: busy }), { ...FACTS, status: 429 }, ADDRESSES).children.map((span) => span.name)).toEqual(['admission']);
  });
});

describe(operationOf.name, () => {
  it('names model calls by the GenAI operations and nothing else', () => {
    expect(['chat_completions', 'responses', 'messages', 'embeddings', 'images_a', 'images_c', 'video_b', 'speech_c', 'count_tokens'].map(operationOf)).toEqual(
      ['chat', 'chat', 'chat', 'embeddings', 'generate_content', 'generate_content', 'generate_content', 'generate_content', 'count_tokens'],
    );
    expect(operationOf('/admin/owners')).toBeUndefined();
  });
});

describe(providerOf.name, () => {
  it('names the API flavour of the protocols the conventions know', () => {
    expect(['chat_completions', 'messages', 'images_c', 'video_b'].map(providerOf)).toEqual(['openai', 'anthropic', 'gcp.gemini', undefined]);
  });
});

describe(usageAttributeOf.name, () => {
  it('maps token figures to GenAI names and keeps the others under gateway.usage', () => {
    expect(
      ['input_tokens', 'output_tokens', 'cached_input_tokens', 'cache_write_input_tokens', 'reasoning_tokens', 'output_images'].map(usageAttributeOf),
    ).toEqual([
      'gen_ai.usage.input_tokens',
      'gen_ai.usage.output_tokens',
      'gen_ai.usage.cache_read.input_tokens',
      'gen_ai.usage.cache_creation.input_tokens',
      'gen_ai.usage.reasoning.output_tokens',
      'gateway.usage.output_images',
    ]);
  });

  it('keeps the cache-write total as the GenAI cache creation figure and the writes by duration under gateway.usage', () => {
    expect(['cache_write_input_tokens', 'cache_write_5m_input_tokens', 'cache_write_1h_input_tokens'].map(usageAttributeOf)).toEqual([
      'gen_ai.usage.cache_creation.input_tokens',
      'gateway.usage.cache_write_5m_input_tokens',
      'gateway.usage.cache_write_1h_input_tokens',
    ]);
  });
});
