import Anthropic from '@anthropic-ai/sdk';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { CanonicalEvent } from '../canonical/events';
import type { TranslationContext } from '../canonical/ids';
import { openReasoning } from '../canonical/reasoning-seal';
import type { CanonicalResponse } from '../canonical/response';
import { encodeSseEvent } from '../sse/encode-sse';
import { encodeMessagesError } from './encode-messages-error';
import { encodeMessagesResponse } from './encode-messages-response';
import { encodeMessagesStream, messagesPingEvent } from './encode-messages-stream';

/**
 * The encoders' output read by the official SDK, served over HTTP as the gateway would:
 * what the SDK accepts and how its MessageStream accumulates it is the contract.
 */

const context: TranslationContext = { newId: (prefix) => `${prefix}_gateway1`, now: () => 1_700_000_000 };
const fromResponses = { protocol: 'responses', upstreamModel: 'gpt-up' };
const params = { model: 'gateway-model', max_tokens: 1024, messages: [{ role: 'user' as const, content: 'Hi' }] };

interface Answer {
  status: number;
  contentType: string;
  body: string;
}

let server: Server;
let client: Anthropic;
let answer: Answer;

beforeAll(async () => {
  server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      response.writeHead(answer.status, { 'content-type': answer.contentType });
      response.end(answer.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  client = new Anthropic({ baseURL: `http://127.0.0.1:${port}`, apiKey: 'sk-ant-test', maxRetries: 0 });
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

async function serveStream(events: CanonicalEvent[]): Promise<void> {
  async function* source(): AsyncGenerator<CanonicalEvent> {
    yield* events;
  }
  let body = encodeSseEvent(messagesPingEvent());
  for await (const event of encodeMessagesStream(source(), context)) body += encodeSseEvent(event);
  answer = { status: 200, contentType: 'text/event-stream', body };
}

describe('messages encoders read by @anthropic-ai/sdk', () => {
  it('parses an encoded non-streamed message', async () => {
    const response: CanonicalResponse = {
      id: 'resp_1',
      model: 'gpt-up',
      output: [
        { type: 'reasoning', text: 'Plan', opaque: { kind: 'encrypted', value: 'gAAAA' }, origin: fromResponses },
        { type: 'text', text: 'Calling.' },
        { type: 'tool_call', id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}', kind: 'function' },
      ],
      stopReason: 'tool_calls',
      usage: { inputTokens: 30, cachedInputTokens: 10, outputTokens: 8 },
    };
    answer = { status: 200, contentType: 'application/json', body: JSON.stringify(encodeMessagesResponse(response, context)) };
    const message = await client.messages.create(params);
    expect(message.id).toBe('msg_gateway1');
    expect(message.stop_reason).toBe('tool_use');
    expect(message.content[0]).toMatchObject({ type: 'thinking', thinking: 'Plan' });
    expect(message.content[2]).toEqual({ type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } });
    expect(message.usage).toEqual({ input_tokens: 20, output_tokens: 8, cache_read_input_tokens: 10, cache_creation_input_tokens: null });
  });

  it('accumulates an encoded stream into the final message, the late usage figures overwriting message_start', async () => {
    await serveStream([
      { type: 'start', id: 'chatcmpl-1', model: 'gpt-up' },
      { type: 'reasoning_start', index: 0, origin: fromResponses },
      { type: 'reasoning_delta', index: 0, text: 'Let me ' },
      { type: 'reasoning_delta', index: 0, text: 'see.' },
      { type: 'reasoning_opaque', index: 0, kind: 'encrypted', value: 'gAAAA', itemId: 'rs_1' },
      { type: 'part_end', index: 0 },
      { type: 'text_start', index: 1 },
      { type: 'text_delta', index: 1, text: 'Checking ' },
      { type: 'text_delta', index: 1, text: 'now.' },
      { type: 'part_end', index: 1 },
      { type: 'tool_call_start', index: 2, id: 'call_1', name: 'get_weather', kind: 'function' },
      { type: 'tool_call_delta', index: 2, arguments: '{"city":"Pa' },
      { type: 'tool_call_delta', index: 2, arguments: 'ris"}' },
      { type: 'part_end', index: 2 },
      { type: 'usage', usage: { inputTokens: 120, cachedInputTokens: 100, cacheWriteInputTokens: 5, outputTokens: 42 } },
      { type: 'finish', stopReason: 'tool_calls' },
      { type: 'end' },
    ]);
    const message = await client.messages.stream(params).finalMessage();
    expect(message.content).toEqual([
      { type: 'thinking', thinking: 'Let me see.', signature: expect.stringMatching(/^gwr1\./) },
      { type: 'text', text: 'Checking now.' },
      { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } },
    ]);
    const thinking = message.content[0] as { signature: string };
    expect(openReasoning(thinking.signature)).toEqual({ origin: fromResponses, kind: 'encrypted', value: 'gAAAA', text: 'Let me see.', itemId: 'rs_1' });
    expect(message).toMatchObject({ id: 'msg_gateway1', model: 'gpt-up', stop_reason: 'tool_use', stop_sequence: null });
    expect(message.usage).toMatchObject({ input_tokens: 15, output_tokens: 42, cache_read_input_tokens: 100, cache_creation_input_tokens: 5 });
  });

  it('reads a redacted thinking block', async () => {
    await serveStream([
      { type: 'start', id: 'm', model: 'gpt-up' },
      { type: 'reasoning_start', index: 0, origin: fromResponses },
      { type: 'reasoning_opaque', index: 0, kind: 'redacted', value: 'hidden' },
      { type: 'part_end', index: 0 },
      { type: 'finish', stopReason: 'end' },
      { type: 'end' },
    ]);
    const message = await client.messages.stream(params).finalMessage();
    expect(message.content).toEqual([{ type: 'redacted_thinking', data: expect.stringMatching(/^gwr1\./) }]);
  });

  it('raises an in-stream error event as an APIError with its type', async () => {
    await serveStream([
      { type: 'start', id: 'm', model: 'gpt-up' },
      { type: 'text_start', index: 0 },
      { type: 'text_delta', index: 0, text: 'Half' },
      { type: 'error', message: 'The upstream is overloaded', kind: 'overloaded' },
    ]);
    const failure = await client.messages
      .stream(params)
      .finalMessage()
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(Anthropic.APIError);
    expect((failure as InstanceType<typeof Anthropic.APIError>).error).toEqual({
      type: 'error',
      error: { type: 'overloaded_error', message: 'The upstream is overloaded' },
    });
  });

  it('raises an encoded error body with its status as the matching SDK error', async () => {
    answer = {
      status: 429,
      contentType: 'application/json',
      body: JSON.stringify(encodeMessagesError({ status: 429, kind: 'rate_limit', message: 'Slow down' })),
    };
    const failure = await client.messages.create(params).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(Anthropic.RateLimitError);
    expect((failure as InstanceType<typeof Anthropic.RateLimitError>).error).toEqual({
      type: 'error',
      error: { type: 'rate_limit_error', message: 'Slow down' },
    });
  });
});
