import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import type { ResponseStreamEvent } from 'openai/resources/responses/responses';
import type { CanonicalEvent } from '../canonical/events';
import { encodeSseEvent } from '../sse/encode-sse';
import { encodeResponsesError } from './encode-responses-error';
import { encodeResponsesResponse, type ResponsesAnswerRequest } from './encode-responses-response';
import { encodeResponsesStream } from './encode-responses-stream';
import { assemble, collect, from, testContext } from './responses-test-kit';

/**
 * The encoders' output read back by the official `openai` SDK: what a responses client of the
 * gateway really parses, served from a tiny HTTP server.
 */

type Answer = { status: number; json: unknown } | { sse: string };

async function withSdk<T>(answer: Answer, use: (client: OpenAI) => Promise<T>): Promise<T> {
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      if ('sse' in answer) {
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        response.end(answer.sse);
        return;
      }
      response.writeHead(answer.status, { 'content-type': 'application/json' });
      response.end(JSON.stringify(answer.json));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  try {
    return await use(new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'sk-test', maxRetries: 0 }));
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

/** The stream helper adds its structured-output parse results (all null here); they are the SDK's, not the wire's. */
const SDK_PARSED_FIELDS = ['parsed', 'parsed_arguments', 'output_parsed'];

function withoutParsedFields(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value, (key, entry: unknown) => (SDK_PARSED_FIELDS.includes(key) ? undefined : entry)));
}

const origin = { protocol: 'messages', upstreamModel: 'claude-sim-1' };
const request: ResponsesAnswerRequest = { echo: { model: 'gateway-model', reasoning: { effort: 'low', summary: 'auto' } }, includeOpaqueReasoning: true };
const params = {
  model: 'gateway-model',
  input: 'Hi',
  reasoning: { effort: 'low' as const, summary: 'auto' as const },
  include: ['reasoning.encrypted_content' as const],
};

const answerEvents: CanonicalEvent[] = [
  { type: 'start', id: 'msg_1', model: 'claude-sim-1', usage: { inputTokens: 12 } },
  { type: 'reasoning_start', index: 0, origin },
  { type: 'reasoning_delta', index: 0, text: 'Short thought.' },
  { type: 'reasoning_opaque', index: 0, kind: 'signature', value: 'sig-1' },
  { type: 'part_end', index: 0 },
  { type: 'text_start', index: 1 },
  { type: 'text_delta', index: 1, text: 'Hello ' },
  { type: 'text_delta', index: 1, text: 'there.' },
  { type: 'part_end', index: 1 },
  { type: 'tool_call_start', index: 2, id: 'toolu_1', name: 'get_weather', kind: 'function' },
  { type: 'tool_call_delta', index: 2, arguments: '{"city":"Paris"}' },
  { type: 'part_end', index: 2 },
  { type: 'tool_call_start', index: 3, id: 'toolu_2', name: 'run_sql', kind: 'custom' },
  { type: 'tool_call_delta', index: 3, arguments: '{"input":"SELECT 1"}' },
  { type: 'part_end', index: 3 },
  { type: 'usage', usage: { outputTokens: 9 } },
  { type: 'finish', stopReason: 'tool_calls' },
  { type: 'end' },
];

async function encodedStream(events: CanonicalEvent[]): Promise<string> {
  return (await collect(encodeResponsesStream(from(events), request, testContext()))).map(encodeSseEvent).join('');
}

describe('responses encoders read by the openai SDK', () => {
  it('parses the JSON answer into the same Response, with output_text derived', async () => {
    const body = encodeResponsesResponse(assemble(answerEvents), request, testContext());
    const response = await withSdk({ status: 200, json: body }, (client) => client.responses.create(params));
    expect(response).toEqual({ ...body, output_text: 'Hello there.' });
  });

  it('accumulates the stream into the final Response the JSON encoder builds', async () => {
    const sse = await encodedStream(answerEvents);
    const { events, final, snapshots } = await withSdk({ sse }, async (client) => {
      const stream = client.responses.stream(params);
      const seen: ResponseStreamEvent[] = [];
      const textSnapshots: string[] = [];
      stream.on('event', (event) => seen.push(event));
      stream.on('response.output_text.delta', (event) => textSnapshots.push(event.snapshot));
      return { final: await stream.finalResponse(), events: seen, snapshots: textSnapshots };
    });
    const json = encodeResponsesResponse(assemble(answerEvents), request, testContext());
    expect(withoutParsedFields(final)).toEqual({ ...json, output_text: 'Hello there.' });
    expect(snapshots).toEqual(['Hello ', 'Hello there.']);
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index));
    expect(final.output.map((item) => item.type)).toEqual(['reasoning', 'message', 'function_call', 'custom_tool_call']);
  });

  it("raises the stream's error after the events before it, and rejects the final response", async () => {
    const sse = await encodedStream([
      { type: 'start', id: 'msg_1', model: 'm' },
      { type: 'text_start', index: 0 },
      { type: 'text_delta', index: 0, text: 'Hel' },
      { type: 'error', message: 'Overloaded.', kind: 'overloaded' },
    ]);
    // The SDK throws at the `error` event (openai 7 and later), so the events before it are what a client sees.
    const types: string[] = [];
    const failure = await withSdk({ sse }, async (client) => {
      for await (const event of await client.responses.create({ ...params, stream: true })) types.push(event.type);
    }).catch((error: unknown) => error);
    expect(failure).toMatchObject({ message: 'Overloaded.' });
    expect(types.slice(-1)).toEqual(['response.output_text.delta']);
    await expect(withSdk({ sse }, (client) => client.responses.stream(params).finalResponse())).rejects.toMatchObject({ message: 'Overloaded.' });
  });

  it('raises the SDK error class of the status from an encoded error body', async () => {
    const body = encodeResponsesError({ status: 429, kind: 'rate_limit', message: 'Too many requests.', code: 'rate_limit_exceeded' });
    const failure = await withSdk({ status: 429, json: body }, (client) => client.responses.create(params).catch((error: unknown) => error));
    expect(failure).toBeInstanceOf(OpenAI.RateLimitError);
    expect(failure).toMatchObject({ status: 429, code: 'rate_limit_exceeded', type: 'rate_limit_error', message: '429 Too many requests.' });
  });
});
