import { decodeSse, parseSseEvent, type SseEvent } from './decode-sse';
import { encodeSseEvent } from './encode-sse';

describe(encodeSseEvent.name, () => {
  it('writes the event name, then the data, then a blank line', () => {
    expect(encodeSseEvent({ event: 'content_block_delta', data: '{"type":"content_block_delta"}' })).toBe(
      'event: content_block_delta\ndata: {"type":"content_block_delta"}\n\n',
    );
  });

  it('writes data alone when there is no event name', () => {
    expect(encodeSseEvent({ data: '[DONE]' })).toBe('data: [DONE]\n\n');
    expect(encodeSseEvent({ data: '' })).toBe('data: \n\n');
  });

  it('splits multi-line data into several data lines', () => {
    expect(encodeSseEvent({ data: 'one\ntwo\n\nfour' })).toBe('data: one\ndata: two\ndata: \ndata: four\n\n');
  });

  it('turns CR and CRLF in data into line breaks, as a reader would', () => {
    expect(encodeSseEvent({ data: 'a\r\nb\rc' })).toBe('data: a\ndata: b\ndata: c\n\n');
  });

  it('writes id and retry', () => {
    expect(encodeSseEvent({ event: 'x', id: '42', retry: 1500, data: 'd' })).toBe('event: x\nid: 42\nretry: 1500\ndata: d\n\n');
  });

  it('refuses an event name or id that would break the framing', () => {
    expect(() => encodeSseEvent({ event: 'a\ndata: injected', data: 'x' })).toThrow(RangeError);
    expect(() => encodeSseEvent({ id: 'a\rb', data: 'x' })).toThrow(RangeError);
    expect(() => encodeSseEvent({ retry: -1, data: 'x' })).toThrow(RangeError);
    expect(() => encodeSseEvent({ retry: 1.5, data: 'x' })).toThrow(RangeError);
  });

  it.each<SseEvent>([
    { data: 'plain' },
    { data: ' leading and trailing spaces ' },
    { data: ': looks like a comment' },
    { data: 'data: looks like a field' },
    { event: 'message_delta', data: '{"usage":{"output_tokens":12}}' },
    { data: 'multi\nline\n', id: '', retry: 0 },
    { data: 'ключ 😀' },
  ])('reads back what it wrote: %j', (event) => {
    expect(parseSseEvent(Buffer.from(encodeSseEvent(event)))).toEqual(event);
  });

  it('produces a stream that decodes back to the same events', async () => {
    const events: SseEvent[] = [{ event: 'a', data: '1' }, { data: 'two\nlines' }, { data: '[DONE]' }];
    async function* source(): AsyncGenerator<Uint8Array> {
      yield Buffer.from(events.map(encodeSseEvent).join(''));
    }
    const decoded: SseEvent[] = [];
    for await (const event of decodeSse(source())) decoded.push(event);
    expect(decoded).toEqual(events);
  });
});
