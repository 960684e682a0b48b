import type { CallFacts } from './call-facts';
import { callLogLevel, callLogLine, createGatewayLog } from './call-log';

const FACTS: CallFacts = {
  requestId: 'request-1',
  clientRequestId: null,
  keyPrefix: 'gk-team-',
  owner: 'team-a',
  method: 'POST',
  route: '/v1/chat/completions',
  entry: 'chat_completions',
  model: 'chat-model',
  line: 'line-a',
  translatedTo: null,
  stream: false,
  status: 200,
  errorCode: null,
  durationMs: 12.345,
  upstreamHeadersMs: 4,
  upstreamMs: 10.06,
  firstByteMs: 11.98,
  usage: { input_tokens: 3 },
  costNano: 5n,
};

describe(callLogLine.name, () => {
  it('names every field of the line, durations in milliseconds to a tenth', () => {
    expect(callLogLine(FACTS)).toEqual({
      request_id: 'request-1',
      client_request_id: null,
      key_prefix: 'gk-team-',
      owner: 'team-a',
      method: 'POST',
      route: '/v1/chat/completions',
      entry: 'chat_completions',
      model: 'chat-model',
      line: 'line-a',
      translated_to: null,
      stream: false,
      status: 200,
      error_code: null,
      duration_ms: 12.3,
      upstream_headers_ms: 4,
      upstream_ms: 10.1,
      first_byte_ms: 12,
    });
  });
});

describe(callLogLevel.name, () => {
  it('is warn for server errors and info for everything else', () => {
    expect([200, 401, 429, 499, 500, 502, 504].map((status) => callLogLevel({ ...FACTS, status }))).toEqual([
      'info', 'info', 'info', 'info', 'warn', 'warn', 'warn',
    ]);
  });
});

describe(createGatewayLog.name, () => {
  it('writes JSON lines with the time in epoch milliseconds, at the given level and above', () => {
    const written: string[] = [];
    const log = createGatewayLog('warn', { write: (line: string) => void written.push(line) });

    log.info({ status: 200 }, 'call');
    log.warn({ status: 502 }, 'call');

    expect(written).toHaveLength(1);
    expect(JSON.parse(written[0]!)).toMatchObject({ level: 40, msg: 'call', status: 502, time: expect.any(Number) });
  });
});
