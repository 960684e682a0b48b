import { spawnSync } from 'node:child_process';
import path from 'node:path';
import pino from 'pino';
import type { CallFacts } from './call-facts';
import { callLogLevel, callLogLine, callLogText, createGatewayLog, millisecondsText } from './call-log';
import { callFacts } from '../../test/support/call-facts';

const FACTS = callFacts({
  durationMs: 12.345,
  upstreamHeadersMs: 4,
  upstreamMs: 10.06,
  firstByteMs: 11.98,
  usage: { input_tokens: 3 },
  costNano: 5n,
});

const TRACE = { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: '00f067aa0ba902b7' };

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
      attempts: 1,
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

  it('lists the lines tried only when the call made several attempts', () => {
    expect(callLogLine({ ...FACTS, attempts: 3, linesTried: ['line-a', 'line-b', 'line-b'] })).toMatchObject({
      line: 'line-a',
      attempts: 3,
      lines_tried: ['line-a', 'line-b', 'line-b'],
    });
    expect(callLogLine({ ...FACTS, attempts: 0, line: null })).not.toHaveProperty('lines_tried');
  });

  it("ends with the trace's ids when the call is traced, and has no trace members when it is not", () => {
    expect(callLogLine(FACTS, TRACE)).toMatchObject({ trace_id: TRACE.traceId, span_id: TRACE.spanId });
    expect(Object.keys(callLogLine(FACTS, TRACE)).slice(-2)).toEqual(['trace_id', 'span_id']);
    expect(Object.keys(callLogLine(FACTS))).not.toContain('trace_id');
  });
});

describe(callLogText.name, () => {
  const TIME = 1_764_000_000_123;
  /** What pino writes for the line object at that level, its clock stopped at TIME. */
  function pinoLine(facts: CallFacts, level: 'info' | 'warn', trace?: typeof TRACE): { text: string; chindings: string } {
    const written: string[] = [];
    const log = pino({ level: 'info', timestamp: () => `,"time":${TIME}` }, { write: (line: string) => void written.push(line) });
    log[level](callLogLine(facts, trace), 'call');
    return { text: written[0]!, chindings: (log as unknown as Record<symbol, string>)[pino.symbols.chindingsSym]! };
  }

  it.each<[string, Partial<CallFacts>, 'info' | 'warn']>([
    ['a plain call', {}, 'info'],
    ['a server error', { status: 502, errorCode: 'upstream_failed', line: null, upstreamHeadersMs: null, upstreamMs: null, firstByteMs: null }, 'warn'],
    ['a request that never got a model', { model: null, entry: 'none', route: null, stream: null, keyPrefix: null, owner: null }, 'info'],
    ['a call of several attempts', { attempts: 3, linesTried: ['line-a', 'line-"b"', 'line-a'] }, 'warn'],
    ['a call that tried no line', { attempts: 0, line: null }, 'info'],
    ['a stream, translated', { stream: true, translatedTo: 'messages', clientRequestId: 'client-7' }, 'info'],
    ['client text that needs escaping', { clientRequestId: 'say "hi" \\ back', model: 'm\u00e9tro-\u2028-\u0007', route: '/v1/\t' }, 'info'],
    ['a surrogate pair and the edges of the control range', { model: 'emoji-\ud83d\ude00', route: '\u001f\u0020\u007f' }, 'info'],
    ['durations that round', { durationMs: 0.04999, upstreamHeadersMs: 1e-7, upstreamMs: 123456.789, firstByteMs: 0 }, 'info'],
    ['durations on a half tenth, and past a day', { durationMs: 0.05, upstreamHeadersMs: 2.25, upstreamMs: 99.95, firstByteMs: 86_400_000.06 }, 'info'],
  ])('is what pino writes for the same line: %s', (_name, change, level) => {
    const facts = { ...FACTS, ...change };
    const { text, chindings } = pinoLine(facts, level);
    expect(callLogText(facts, level, chindings, TIME)).toBe(text);
  });

  it('is what pino writes for the same line of a traced call', () => {
    const { text, chindings } = pinoLine(FACTS, 'info', TRACE);
    expect(callLogText(FACTS, 'info', chindings, TIME, TRACE)).toBe(text);
    expect(text).toContain(`"first_byte_ms":12,"trace_id":"${TRACE.traceId}","span_id":"${TRACE.spanId}","msg":"call"`);
  });

  it('escapes lone surrogates as JSON.stringify does (pino writes them raw, and UTF-8 output turns them into U+FFFD)', () => {
    const text = callLogText({ ...FACTS, clientRequestId: 'a\ud800b\udfffc' }, 'info', '', TIME);
    expect(text).toContain(String.raw`"client_request_id":"a\ud800b\udfffc"`);
    expect(JSON.parse(text).client_request_id).toBe('a\ud800b\udfffc');
  });
});

describe(callLogLevel.name, () => {
  it('is warn for server errors and info for everything else', () => {
    expect([200, 401, 429, 499, 500, 502, 504].map((status) => callLogLevel({ ...FACTS, status }))).toEqual([
      'info',
      'info',
      'info',
      'info',
      'warn',
      'warn',
      'warn',
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

describe('standard output', () => {
  const BUILT = path.resolve(__dirname, '../../dist/src/observability/call-log.js');
  /** Runs a script against the built logger (`npm test` builds first) in a child process; what reached its standard output. */
  function stdoutOf(script: string): string[] {
    const child = spawnSync(process.execPath, ['-e', `const { createGatewayLog } = require(${JSON.stringify(BUILT)});\n${script}`], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(child.stderr).toBe('');
    return child.stdout.split('\n').filter((line) => line !== '');
  }
  /** Ends the child at once, no exit handlers: only what was written by then is there. */
  const KILL = `require('fs').writeSync(1, 'marker\\n'); process.kill(process.pid, 'SIGKILL');`;

  it('writes every line, in order, when the process exits right after logging them', () => {
    const lines = stdoutOf(`
      const log = createGatewayLog('info');
      for (let i = 0; i < 2000; i++) log.info({ i, padding: 'x'.repeat(100) }, 'call');
      process.exit(0);`);
    expect(lines.map((line) => JSON.parse(line).i)).toEqual([...Array(2000).keys()]);
  });

  it('writes lines of multi-byte characters whole across chunks, and a line longer than a chunk on its own', () => {
    const lines = stdoutOf(`
      const log = createGatewayLog('info');
      for (let i = 0; i < 1500; i++) log.info({ i, text: 'é€😀'.repeat(i % 40) }, 'call');
      log.info({ i: 1500, text: 'ü'.repeat(40000) }, 'call');
      log.info({ i: 1501, text: '' }, 'call');
      process.exit(0);`);
    const parsed = lines.map((line) => JSON.parse(line) as { i: number; text: string });
    expect(parsed.map((line) => line.i)).toEqual([...Array(1502).keys()]);
    expect(parsed.slice(0, 1500).every((line) => line.text === 'é€😀'.repeat(line.i % 40))).toBe(true);
    expect(parsed[1500]!.text).toBe('ü'.repeat(40000));
  });

  it('writes a line within about a second when nothing else is logged', () => {
    const lines = stdoutOf(`
      const log = createGatewayLog('info');
      log.info({ n: 1 }, 'call');
      setTimeout(() => { ${KILL} }, 1_500);`);
    expect(lines).toEqual([expect.stringContaining('"n":1'), 'marker']);
  });

  it('writes what waits when the log is flushed (the gateway flushes it at shutdown)', () => {
    const lines = stdoutOf(`
      const log = createGatewayLog('info');
      log.info({ n: 1 }, 'call');
      log.flush(() => { ${KILL} });`);
    expect(lines).toEqual([expect.stringContaining('"n":1'), 'marker']);
  });

  it('keeps a line back while less than a chunk waits (the point of batching)', () => {
    const lines = stdoutOf(`
      const log = createGatewayLog('info');
      log.info({ n: 1 }, 'call');
      setTimeout(() => { ${KILL} }, 100);`);
    expect(lines).toEqual(['marker']);
  });
});

describe(millisecondsText.name, () => {
  it('writes what String() writes for the duration rounded to a tenth', () => {
    const values = [0, -0, 0.04999, 0.05, 0.95, 9.95, 1e-7, 123456.789, 86_400_000.06, 2 ** 31 + 0.37, 1e15 + 0.3, 1e300, -1.23, -0.05, NaN];
    // Durations as the clock gives them: fractions of a millisecond over six orders of magnitude.
    let seed = 7;
    for (let index = 0; index < 5_000; index++) {
      seed = (seed * 48_271) % 2_147_483_647;
      values.push((seed / 2_147_483_647) * 10 ** (index % 7));
    }
    for (const value of values) expect([value, millisecondsText(value)]).toEqual([value, String(Math.round(value * 10) / 10)]);
    expect(millisecondsText(null)).toBe('null');
  });
});
