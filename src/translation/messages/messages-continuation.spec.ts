import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CanonicalEvent } from '../canonical/events';
import type { TranslationContext } from '../canonical/ids';
import { decodeSse } from '../sse/decode-sse';
import { decodeMessagesRequest } from './decode-messages-request';
import { decodeMessagesResponse } from './decode-messages-response';
import { decodeMessagesStream } from './decode-messages-stream';
import { encodeMessagesRequest } from './encode-messages-request';
import { encodeMessagesResponse } from './encode-messages-response';
import { encodeMessagesStream } from './encode-messages-stream';

/**
 * Reasoning continuation end to end (docs/translation.md "Reasoning"): an answer's thinking is
 * sealed for the client, comes back in its next request, and reaches the upstream again in the
 * upstream's own form, but only on the same protocol and model.
 */

const context: TranslationContext = { newId: (prefix) => `${prefix}_gateway1`, now: () => 1_700_000_000 };
const MODEL = 'claude-sim-1';
const origin = { protocol: 'messages', upstreamModel: MODEL };
const VENDOR_SIGNATURE = 'f02qVaE0G3fUwcqPYsBLX4JSgh/aDFKEjozs23WDPFI=';
const THOUGHT = 'Thinking about "Why is the sky blue?" before answering.';

function fixture(name: string): Buffer {
  return readFileSync(join(__dirname, '__fixtures__', name));
}

/** The client's next request: its question, the assistant content it got, a follow-up. */
function nextRequest(content: unknown, upstreamModel: string) {
  const body = {
    model: 'gateway-model',
    max_tokens: 4096,
    thinking: { type: 'enabled', budget_tokens: 2048 },
    messages: [
      { role: 'user', content: 'Why is the sky blue?' },
      { role: 'assistant', content },
      { role: 'user', content: 'And at sunset?' },
    ],
  };
  return encodeMessagesRequest(decodeMessagesRequest(body, { upstreamModel }).value).value;
}

async function* chunks(bytes: Buffer): AsyncGenerator<Uint8Array> {
  yield bytes;
}

/** What a client holds after a stream: each block with its deltas applied. */
async function contentOfStream(events: AsyncIterable<CanonicalEvent>): Promise<Array<Record<string, unknown>>> {
  const content: Array<Record<string, unknown>> = [];
  for await (const event of encodeMessagesStream(events, context)) {
    const data = JSON.parse(event.data) as { type: string; index: number; content_block: Record<string, unknown>; delta: Record<string, string> };
    if (data.type === 'content_block_start') content[data.index] = { ...data.content_block };
    if (data.type !== 'content_block_delta') continue;
    const block = content[data.index];
    if (data.delta.type === 'thinking_delta') block.thinking += data.delta.thinking;
    if (data.delta.type === 'text_delta') block.text += data.delta.text;
    if (data.delta.type === 'signature_delta') block.signature = data.delta.signature;
  }
  return content;
}

describe('messages reasoning continuation', () => {
  it('gives the same messages upstream model its own thinking back, verbatim, from a sealed answer', () => {
    const answer = encodeMessagesResponse(decodeMessagesResponse(JSON.parse(fixture('messages-thinking.json').toString('utf8')), origin), context);
    const [thinking] = answer.content as Array<Record<string, string>>;
    expect(thinking.signature).not.toBe(VENDOR_SIGNATURE);
    expect((nextRequest(answer.content, MODEL).messages as Array<{ content: unknown[] }>)[1].content).toEqual([
      { type: 'thinking', thinking: THOUGHT, signature: VENDOR_SIGNATURE },
      { type: 'text', text: 'Hello from claude-sim-1: Why is the sky blue?' },
    ]);
  });

  it('does the same for a streamed answer', async () => {
    const content = await contentOfStream(decodeMessagesStream(decodeSse(chunks(fixture('messages-thinking.sse'))), origin));
    expect((nextRequest(content, MODEL).messages as Array<{ content: unknown[] }>)[1].content[0]).toEqual({
      type: 'thinking',
      thinking: THOUGHT,
      signature: VENDOR_SIGNATURE,
    });
  });

  it('leaves the thinking out for another upstream model', () => {
    const answer = encodeMessagesResponse(decodeMessagesResponse(JSON.parse(fixture('messages-thinking.json').toString('utf8')), origin), context);
    expect((nextRequest(answer.content, 'claude-other').messages as Array<{ content: unknown[] }>)[1].content).toEqual([
      { type: 'text', text: 'Hello from claude-sim-1: Why is the sky blue?' },
    ]);
  });

  it('leaves out thinking the client got straight from a vendor (an unsealed signature)', () => {
    const content = [
      { type: 'thinking', thinking: THOUGHT, signature: VENDOR_SIGNATURE },
      { type: 'text', text: 'Blue light scatters.' },
    ];
    expect((nextRequest(content, MODEL).messages as Array<{ content: unknown[] }>)[1].content).toEqual([{ type: 'text', text: 'Blue light scatters.' }]);
  });

  it('opens a responses upstream seal for the responses encoder, and a messages upstream leaves it out', () => {
    const responsesOrigin = { protocol: 'responses', upstreamModel: MODEL };
    const answer = encodeMessagesResponse(
      {
        id: 'resp_1',
        model: MODEL,
        output: [
          { type: 'reasoning', text: 'Summary', summary: ['Summary'], opaque: { kind: 'encrypted', value: 'gAAAA', itemId: 'rs_1' }, origin: responsesOrigin },
        ],
        stopReason: 'end',
        usage: {},
      },
      context,
    );
    const body = { model: 'g', max_tokens: 100, messages: [{ role: 'assistant', content: answer.content }] };
    const [part] = decodeMessagesRequest(body, { upstreamModel: MODEL }).value.messages[0].parts;
    expect(part).toEqual({ type: 'reasoning', text: 'Summary', opaque: { kind: 'encrypted', value: 'gAAAA', itemId: 'rs_1' }, origin: responsesOrigin });
    expect(nextRequest(answer.content, MODEL).messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Why is the sky blue?' },
          { type: 'text', text: 'And at sunset?' },
        ],
      },
    ]);
  });
});
