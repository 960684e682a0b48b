import type { IncomingHttpHeaders } from 'node:http';
import { INTERFACE_NAMES, InterfaceName } from '../config/gateway-config';
import { DEFAULT_MESSAGES_VERSION, defaultAuthStyle, returnedResponseHeaders, upstreamRequestHeaders } from './header-policy';

const LINE_KEY = 'vendor-line-secret';
const CLIENT_KEY = 'gk-client-gateway-key';

/** Everything a client might send, secrets and hop-by-hop headers included. */
const CLIENT_HEADERS: IncomingHttpHeaders = {
  host: 'gateway.example',
  connection: 'keep-alive',
  'content-length': '42',
  'content-type': 'application/json',
  accept: 'text/event-stream',
  'user-agent': 'OpenAI/JS 6.0.0',
  authorization: `Bearer ${CLIENT_KEY}`,
  'x-api-key': CLIENT_KEY,
  'x-goog-api-key': CLIENT_KEY,
  'x-alt-api-key': CLIENT_KEY,
  cookie: 'session=abc',
  'x-forwarded-for': '10.0.0.1',
  'x-client-request-id': 'client-1',
  'x-stainless-os': 'Linux',
  'openai-organization': 'org-1',
  'chat-beta': 'assistants=v2',
  'openai-beta': 'assistants=v2',
  'messages-beta': 'tools-2024',
  'anthropic-beta': 'tools-2024',
};

describe(upstreamRequestHeaders.name, () => {
  it('forwards only the allowed client headers and the line credential', () => {
    const headers = upstreamRequestHeaders(CLIENT_HEADERS, 'chat_completions', { style: 'bearer', apiKey: LINE_KEY });

    expect(headers).toEqual({
      'content-type': 'application/json',
      accept: 'text/event-stream',
      'user-agent': 'OpenAI/JS 6.0.0',
      'chat-beta': 'assistants=v2',
      'openai-beta': 'assistants=v2',
      'messages-beta': 'tools-2024',
      'anthropic-beta': 'tools-2024',
      authorization: `Bearer ${LINE_KEY}`,
    });
  });

  it.each(INTERFACE_NAMES.map((entry) => [entry]))('never passes the X-Gateway-Tags header upstream on %s', (entry: InterfaceName) => {
    const headers = upstreamRequestHeaders({ ...CLIENT_HEADERS, 'x-gateway-tags': 'app:search,env:prod' }, entry, { style: 'bearer', apiKey: LINE_KEY });

    expect(Object.keys(headers)).not.toContain('x-gateway-tags');
    expect(JSON.stringify(headers)).not.toContain('app:search');
  });

  it.each(INTERFACE_NAMES.map((entry) => [entry]))('never passes the trace context upstream on %s', (entry: InterfaceName) => {
    const traced = {
      ...CLIENT_HEADERS,
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      tracestate: 'vendor=opaque',
      baggage: 'user=alice',
    };
    const headers = upstreamRequestHeaders(traced, entry, { style: 'bearer', apiKey: LINE_KEY });

    expect(Object.keys(headers).filter((name) => ['traceparent', 'tracestate', 'baggage'].includes(name))).toEqual([]);
    expect(JSON.stringify(headers)).not.toContain('0af7651916cd43dd8448eb211c80319c');
  });

  it.each(INTERFACE_NAMES.map((entry) => [entry]))('never passes the client key upstream on %s', (entry: InterfaceName) => {
    for (const style of ['bearer', 'x-api-key', 'x-alt-api-key'] as const) {
      const headers = upstreamRequestHeaders(CLIENT_HEADERS, entry, { style, apiKey: LINE_KEY });

      expect(JSON.stringify(headers)).not.toContain(CLIENT_KEY);
      expect(headers).not.toHaveProperty('cookie');
      expect(headers).not.toHaveProperty('host');
      expect(headers).not.toHaveProperty('content-length');
    }
  });

  it.each([
    ['bearer', 'authorization', `Bearer ${LINE_KEY}`],
    ['x-api-key', 'x-api-key', LINE_KEY],
    ['x-alt-api-key', 'x-goog-api-key', LINE_KEY],
  ] as const)('sends the line key in the %s style as %s', (style, name, value) => {
    const headers = upstreamRequestHeaders({}, 'chat_completions', { style, apiKey: LINE_KEY });

    expect(headers[name]).toBe(value);
    const credentialNames = ['authorization', 'x-api-key', 'x-goog-api-key'].filter((header) => header in headers);
    expect(credentialNames).toEqual([name]);
  });

  it('adds the default messages version under both spellings when the client sends none', () => {
    const headers = upstreamRequestHeaders({}, 'messages', { style: 'x-api-key', apiKey: LINE_KEY });

    expect(DEFAULT_MESSAGES_VERSION).toBe('2023-06-01');
    expect(headers['anthropic-version']).toBe('2023-06-01');
    expect(headers['messages-version']).toBe('2023-06-01');
  });

  it.each(['anthropic-version', 'messages-version'])("keeps the client's own %s on a messages call", (name) => {
    const headers = upstreamRequestHeaders({ [name]: '2024-10-22' }, 'messages', { style: 'x-api-key', apiKey: LINE_KEY });

    expect(headers[name]).toBe('2024-10-22');
    expect(Object.values(headers)).not.toContain(DEFAULT_MESSAGES_VERSION);
  });

  it('adds no messages version to other interfaces', () => {
    const headers = upstreamRequestHeaders({}, 'chat_completions', { style: 'bearer', apiKey: LINE_KEY });

    expect(headers).not.toHaveProperty('anthropic-version');
    expect(headers).not.toHaveProperty('messages-version');
  });

  it('sends application/json when the client gave no content type', () => {
    expect(upstreamRequestHeaders({}, 'embeddings', { style: 'bearer', apiKey: LINE_KEY })['content-type']).toBe('application/json');
  });

  it("keeps the client's content type", () => {
    const headers = upstreamRequestHeaders({ 'content-type': 'application/json; charset=utf-8' }, 'responses', {
      style: 'bearer',
      apiKey: LINE_KEY,
    });

    expect(headers['content-type']).toBe('application/json; charset=utf-8');
  });

  it('joins a repeated header into one value', () => {
    const headers = upstreamRequestHeaders({ 'anthropic-beta': ['a-1', 'b-2'] } as unknown as IncomingHttpHeaders, 'messages', {
      style: 'x-api-key',
      apiKey: LINE_KEY,
    });

    expect(headers['anthropic-beta']).toBe('a-1, b-2');
  });
});

describe(defaultAuthStyle.name, () => {
  const expected: Record<InterfaceName, string> = {
    chat_completions: 'bearer',
    responses: 'bearer',
    messages: 'x-api-key',
    embeddings: 'bearer',
    images_a: 'bearer',
    images_b: 'bearer',
    images_c: 'x-alt-api-key',
    video_b: 'bearer',
    video_c: 'bearer',
    speech_c: 'bearer',
  };

  it.each(INTERFACE_NAMES.map((entry) => [entry, expected[entry]]))('uses %s upstream with %s by default', (entry, style) => {
    expect(defaultAuthStyle(entry as InterfaceName)).toBe(style);
  });
});

describe(returnedResponseHeaders.name, () => {
  it('returns retry hints and unified rate-limit state only', () => {
    const headers = returnedResponseHeaders({
      'retry-after': '7',
      'retry-after-ms': '7000',
      'x-should-retry': 'true',
      'anthropic-ratelimit-unified-status': 'allowed',
      'messages-ratelimit-unified-reset': '1700000000',
      'set-cookie': ['a=1', 'b=2'],
      'content-length': '100',
      'transfer-encoding': 'chunked',
      'x-request-id': 'upstream-request-id',
      'request-id': 'upstream-request-id',
      'openai-organization': 'vendor-org',
      'anthropic-ratelimit-requests-remaining': '10',
      'x-ratelimit-remaining-tokens': '100',
      server: 'upstream',
      absent: undefined,
    });

    expect(headers).toEqual({
      'retry-after': '7',
      'retry-after-ms': '7000',
      'x-should-retry': 'true',
      'anthropic-ratelimit-unified-status': 'allowed',
      'messages-ratelimit-unified-reset': '1700000000',
    });
  });

  it('joins a repeated returned header into one value', () => {
    expect(returnedResponseHeaders({ 'retry-after': ['1', '2'] })).toEqual({ 'retry-after': '1, 2' });
  });
});
