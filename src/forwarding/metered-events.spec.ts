import { MeteredEvents } from './metered-events';
import { ChatMeter, MessagesMeter } from '../metering/response-meter';

const chunk = (data: unknown) => `data: ${JSON.stringify(data)}\n\n`;
const tokens = ['Hel', 'lo', ' there'].map((content, index) =>
  chunk({ id: 'chatcmpl-1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content }, finish_reason: index === 2 ? 'stop' : null }] }),
);
const usageChunk = chunk({
  id: 'chatcmpl-1',
  object: 'chat.completion.chunk',
  choices: [],
  usage: { prompt_tokens: 9, completion_tokens: 3, total_tokens: 12 },
});
const done = 'data: [DONE]\n\n';
/** A chat stream whose usage chunk the gateway asked for and the client did not. */
const stream = [...tokens, usageChunk, done].join('');
const passed = [...tokens, done].join('');

/** Pipes `chunks` through a chat meter; what the client got and what the meter read. */
function pipe(chunks: string[], clientWantsUsage = false) {
  const meter = new ChatMeter(clientWantsUsage);
  const events = new MeteredEvents(meter);
  const out: Buffer[] = [];
  for (const text of chunks) {
    const bytes = events.push(Buffer.from(text, 'latin1'));
    if (bytes) out.push(bytes);
  }
  const rest = events.flush();
  if (rest) out.push(rest);
  return { client: Buffer.concat(out).toString('latin1'), figures: meter.figures() };
}

describe(MeteredEvents.name, () => {
  it('meters the usage chunk and keeps it back, wherever the stream is cut into two chunks', () => {
    for (let cut = 0; cut <= stream.length; cut++) {
      const { client, figures } = pipe([stream.slice(0, cut), stream.slice(cut)]);
      expect({ cut, client }).toEqual({ cut, client: passed });
      expect({ cut, figures }).toEqual({ cut, figures: { input_tokens: 9, output_tokens: 3 } });
    }
  });

  it('does the same when every byte comes alone, and with CR LF line ends', () => {
    expect(pipe([...stream])).toEqual({ client: passed, figures: { input_tokens: 9, output_tokens: 3 } });
    const crlf = (text: string) => text.replace(/\n/g, '\r\n');
    const text = crlf(stream);
    // Cut between the CR and the LF that end the usage chunk, the chunk goes at its CR and the LF
    // follows alone: an empty line, which a client's parser skips.
    const betweenCrAndLf = crlf([...tokens, usageChunk].join('')).length - 1;
    for (let cut = 0; cut <= text.length; cut++) {
      const client = cut === betweenCrAndLf ? crlf(tokens.join('')) + '\n' + crlf(done) : crlf(passed);
      expect({ cut, ...pipe([text.slice(0, cut), text.slice(cut)]) }).toEqual({ cut, client, figures: { input_tokens: 9, output_tokens: 3 } });
    }
  });

  it('passes a chunk of whole events with nothing for the meter as it came, uncut', () => {
    const events = new MeteredEvents(new ChatMeter(false));
    const whole = Buffer.from(tokens.join(''));

    expect(events.push(whole)).toBe(whole);
  });

  it('passes chat chunks whose usage is null (include_usage puts one in each) uncut', () => {
    const events = new MeteredEvents(new ChatMeter(false));
    const whole = Buffer.from(tokens.map((token) => token.replace('}\n\n', ',"usage":null}\n\n')).join(''));

    expect(whole.toString()).toContain('"finish_reason":null}],"usage":null}');
    expect(events.push(whole)).toBe(whole);
  });

  it('reads a chunk of whole events that names usage, and keeps back only its usage chunk', () => {
    expect(pipe([tokens[2] + usageChunk + done])).toEqual({ client: tokens[2] + done, figures: { input_tokens: 9, output_tokens: 3 } });
    expect(pipe([tokens[2] + usageChunk + done], true).client).toBe(tokens[2] + usageChunk + done);
  });

  it('passes the events before the first one with a word as a part of the chunk, not cut apart', () => {
    const events = new MeteredEvents(new ChatMeter(false));
    const merged = Buffer.from(tokens.join('') + usageChunk);
    const out = events.push(merged)!;

    expect(out.toString()).toBe(tokens.join(''));
    expect(out.buffer).toBe(merged.buffer);
    expect(out.byteOffset).toBe(merged.byteOffset);
  });

  it('reads only the events with a word in a messages stream that comes as one chunk, and passes the rest', () => {
    const named = (name: string, data: unknown) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
    const messages = [
      named('message_start', { type: 'message_start', message: { id: 'msg_1', usage: { input_tokens: 11, output_tokens: 1 } } }),
      named('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
      ...['a', 'b', 'c'].map((text) => named('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } })),
      named('content_block_stop', { type: 'content_block_stop', index: 0 }),
      named('message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 3 } }),
      named('message_stop', { type: 'message_stop' }),
    ].join('');
    const meter = new MessagesMeter();
    const read = jest.spyOn(meter, 'readEvent');
    const out = new MeteredEvents(meter).push(Buffer.from(messages));

    expect(out?.toString()).toBe(messages);
    expect(read.mock.calls.map(([raw]) => raw.toString().split('\n')[0])).toEqual(['event: message_start', 'event: message_delta']);
    expect(meter.figures()).toMatchObject({ input_tokens: 11, output_tokens: 3 });
    for (const stream of [messages, messages.replace(/\n/g, '\r\n')]) {
      for (let cut = 0; cut <= stream.length; cut++) {
        const cutMeter = new MessagesMeter();
        const events = new MeteredEvents(cutMeter);
        const parts = [events.push(Buffer.from(stream.slice(0, cut))), events.push(Buffer.from(stream.slice(cut))), events.flush()];
        expect({ cut, out: Buffer.concat(parts.filter((part) => part !== undefined)).toString() }).toEqual({ cut, out: stream });
        expect({ cut, figures: cutMeter.figures() }).toEqual({ cut, figures: meter.figures() });
      }
    }
  });

  it('holds a partial event back until its end comes, even when the end carries no word', () => {
    const events = new MeteredEvents(new MessagesMeter());
    const start = 'event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":4,"output_tokens":1}}}\n\n';
    const cut = start.indexOf('"usage"') + 8;

    expect(events.push(Buffer.from(start.slice(0, cut)))).toBeUndefined();
    expect(events.push(Buffer.from(start.slice(cut)))?.toString()).toBe(start);
  });

  it('reads an event left without its blank line at the end of the body', () => {
    const { client, figures } = pipe([tokens[0], usageChunk.trimEnd()]);

    expect(client).toBe(tokens[0]);
    expect(figures).toEqual({ input_tokens: 9, output_tokens: 3 });
  });
});
