import { decodeSse, parseSseEvent, SseDecoder, SseEventSplitter, type SseEvent } from './decode-sse';

/** Feeds `chunks` through one splitter and returns every piece as text, flush included. */
function split(chunks: Array<string | Buffer>): string[] {
  const splitter = new SseEventSplitter();
  const pieces = chunks.flatMap((chunk) => splitter.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk));
  return [...pieces, ...splitter.flush()].map((piece) => piece.toString('utf8'));
}

/** Cuts `bytes` at the given byte offsets. */
function cut(bytes: Buffer, offsets: number[]): Buffer[] {
  const points = [0, ...offsets, bytes.length];
  return points.slice(1).map((end, index) => bytes.subarray(points[index], end));
}

/** Parses every piece and keeps the events, as a translating consumer would. */
function eventsOf(pieces: string[]): SseEvent[] {
  return pieces.map((piece) => parseSseEvent(Buffer.from(piece))).filter((event) => event !== undefined);
}

async function* streamOf(chunks: Array<string | Uint8Array>): AsyncGenerator<Uint8Array> {
  for (const chunk of chunks) yield typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
}

async function decodeAll(chunks: Array<string | Uint8Array>): Promise<SseEvent[]> {
  const events: SseEvent[] = [];
  for await (const event of decodeSse(streamOf(chunks))) events.push(event);
  return events;
}

/** A stream mixing every line end, a comment, a BOM, a 4-byte character and the [DONE] marker. */
const MIXED_STREAM = Buffer.from(
  '\ufeffevent: first\ndata: {"a":"é"}\n\n' + ': ping\r\n\r\n' + 'data: line one\r\ndata:line two\r\n\r\n' + 'id: 7\rdata: 😀 smile\r\r' + 'data: [DONE]\n\n',
);
const MIXED_EVENTS: SseEvent[] = [{ event: 'first', data: '{"a":"é"}' }, { data: 'line one\nline two' }, { data: '😀 smile', id: '7' }, { data: '[DONE]' }];

describe(SseEventSplitter.name, () => {
  it('cuts at blank lines and keeps each event with its blank line', () => {
    expect(split(['data: a\n\nevent: b\ndata: c\n\n'])).toEqual(['data: a\n\n', 'event: b\ndata: c\n\n']);
  });

  it('recognises CRLF and lone CR line ends', () => {
    expect(split(['data: a\r\n\r\ndata: b\r\rdata: c\n\r\n'])).toEqual(['data: a\r\n\r\n', 'data: b\r\r', 'data: c\n\r\n']);
  });

  it('joins a CRLF split across chunks into one line end', () => {
    expect(split(['data: a\r', '\n\r\n', 'data: b\r\n', '\r', '\n'])).toEqual(['data: a\r\n\r\n', 'data: b\r\n\r', '\n']);
  });

  it('treats a CR at the end of a chunk followed by another CR as a blank line', () => {
    expect(split(['data: a\r', '\rdata: b\r', 'data: c\r\r'])).toEqual(['data: a\r\r', 'data: b\rdata: c\r\r']);
  });

  it('hands out an event closed by a lone CR at once, before the next chunk arrives', () => {
    const splitter = new SseEventSplitter();
    expect(splitter.push(Buffer.from('data: a\r\r')).map(String)).toEqual(['data: a\r\r']);
    expect(splitter.push(Buffer.from('data: b\n\n')).map(String)).toEqual(['data: b\n\n']);
  });

  it('keeps an event spread over many chunks whole', () => {
    expect(split(['da', 'ta: ', 'long', ' value', '\n', '\n'])).toEqual(['data: long value\n\n']);
  });

  it('keeps a 4-byte character split across three chunks whole', () => {
    const bytes = Buffer.from('data: 😀\n\n');
    expect(split(cut(bytes, [7, 9]))).toEqual(['data: 😀\n\n']);
  });

  it('returns an event missing its blank line from flush', () => {
    const splitter = new SseEventSplitter();
    expect(splitter.push(Buffer.from('data: a\n\ndata: b\n'))).toHaveLength(1);
    expect(splitter.flush().map(String)).toEqual(['data: b\n']);
    expect(splitter.flush()).toEqual([]);
  });

  it('passes comments and blank lines through as pieces of their own', () => {
    expect(split([': ping\n\n\ndata: x\n\n'])).toEqual([': ping\n\n', '\n', 'data: x\n\n']);
  });

  it('ignores empty chunks and accepts plain Uint8Arrays', () => {
    const splitter = new SseEventSplitter();
    expect(splitter.push(new Uint8Array(0))).toEqual([]);
    expect(splitter.push(new TextEncoder().encode('data: a\n\n')).map(String)).toEqual(['data: a\n\n']);
  });

  it('splits a stream in one chunk into its events', () => {
    expect(split([MIXED_STREAM])).toEqual([
      '\ufeffevent: first\ndata: {"a":"é"}\n\n',
      ': ping\r\n\r\n',
      'data: line one\r\ndata:line two\r\n\r\n',
      'id: 7\rdata: 😀 smile\r\r',
      'data: [DONE]\n\n',
    ]);
  });

  it('reproduces the input exactly and finds the same events at every single cut', () => {
    for (let offset = 0; offset <= MIXED_STREAM.length; offset++) {
      const pieces = split(cut(MIXED_STREAM, [offset]));
      expect(pieces.join('')).toBe(MIXED_STREAM.toString('utf8'));
      expect(eventsOf(pieces)).toEqual(MIXED_EVENTS);
    }
  });

  it('reproduces the input exactly at every pair of cuts', () => {
    for (let first = 0; first <= MIXED_STREAM.length; first++) {
      for (let second = first; second <= MIXED_STREAM.length; second++) {
        const pieces = split(cut(MIXED_STREAM, [first, second]));
        expect(Buffer.concat(pieces.map((piece) => Buffer.from(piece))).equals(MIXED_STREAM)).toBe(true);
        expect(eventsOf(pieces)).toEqual(MIXED_EVENTS);
      }
    }
  });

  it('reproduces the input fed one byte at a time', () => {
    const offsets = Array.from({ length: MIXED_STREAM.length - 1 }, (_, index) => index + 1);
    expect(split(cut(MIXED_STREAM, offsets)).join('')).toBe(MIXED_STREAM.toString('utf8'));
  });
});

describe(parseSseEvent.name, () => {
  const parse = (text: string) => parseSseEvent(Buffer.from(text));

  it('reads the event name and data', () => {
    expect(parse('event: message_start\ndata: {"type":"message_start"}\n\n')).toEqual({
      event: 'message_start',
      data: '{"type":"message_start"}',
    });
  });

  it('joins several data lines with a line feed', () => {
    expect(parse('data: a\ndata: b\r\ndata:\rdata: c\n\n')).toEqual({ data: 'a\nb\n\nc' });
  });

  it('strips exactly one space after the colon, and none when there is none', () => {
    expect(parse('data:x\n\n')).toEqual({ data: 'x' });
    expect(parse('data:  x \n\n')).toEqual({ data: ' x ' });
    expect(parse('data: a:b: c\n\n')).toEqual({ data: 'a:b: c' });
  });

  it('reads a field name without a colon as an empty value', () => {
    expect(parse('data\n\n')).toEqual({ data: '' });
    expect(parse('data\ndata\n\n')).toEqual({ data: '\n' });
  });

  it('returns undefined for comments, empty events and events without data', () => {
    expect(parse(': ping\n\n')).toBeUndefined();
    expect(parse('\n')).toBeUndefined();
    expect(parse('\r\n')).toBeUndefined();
    expect(parse('event: ping\n\n')).toBeUndefined();
    expect(parse('id: 4\n\n')).toBeUndefined();
  });

  it('skips comment lines inside an event', () => {
    expect(parse(': keep-alive\ndata: a\n: more\n\n')).toEqual({ data: 'a' });
  });

  it('reads id and retry, ignoring a retry that is not all digits and an id holding NUL', () => {
    expect(parse('id: 12\nretry: 3000\ndata: a\n\n')).toEqual({ data: 'a', id: '12', retry: 3000 });
    expect(parse('retry: 3s\nretry:\nid: a\u0000b\ndata: a\n\n')).toEqual({ data: 'a' });
  });

  it('lets a later event field win and treats an empty one as the default type', () => {
    expect(parse('event: a\nevent: b\ndata: x\n\n')).toEqual({ event: 'b', data: 'x' });
    expect(parse('event: a\nevent:\ndata: x\n\n')).toEqual({ data: 'x' });
  });

  it('ignores unknown fields and field names that only start like known ones', () => {
    expect(parse('foo: bar\ndatum: no\ndata: yes\nData: no\n\n')).toEqual({ data: 'yes' });
  });

  it('ignores a leading byte order mark', () => {
    expect(parse('\ufeffdata: a\n\n')).toEqual({ data: 'a' });
  });

  it('passes [DONE] through as data', () => {
    expect(parse('data: [DONE]\n\n')).toEqual({ data: '[DONE]' });
  });

  it('decodes multi-byte characters', () => {
    expect(parse('data: ключ 😀\n\n')).toEqual({ data: 'ключ 😀' });
  });
});

describe(SseDecoder.name, () => {
  it('returns the events each chunk completes, and at the end the last one if its line is complete', () => {
    const decoder = new SseDecoder();
    expect(decoder.push(Buffer.from('data: a\n\nevent: e\nda'))).toEqual([{ data: 'a' }]);
    expect(decoder.push(Buffer.from('ta: b\n'))).toEqual([]);
    expect(decoder.push(Buffer.from('\ndata: c\n'))).toEqual([{ event: 'e', data: 'b' }]);
    expect(decoder.end()).toEqual([{ data: 'c' }]);
  });

  it('gives nothing at the end for an event cut in the middle of a line', () => {
    const decoder = new SseDecoder();
    expect(decoder.push(Buffer.from('data: a\n\ndata: {"par'))).toEqual([{ data: 'a' }]);
    expect(decoder.end()).toEqual([]);
  });
});

describe(decodeSse.name, () => {
  it('decodes events from chunks cut anywhere', async () => {
    for (let offset = 0; offset <= MIXED_STREAM.length; offset++) {
      expect(await decodeAll(cut(MIXED_STREAM, [offset]))).toEqual(MIXED_EVENTS);
    }
  });

  it('decodes a 4-byte character split across three chunks', async () => {
    const bytes = Buffer.from('data: a😀b\n\n');
    expect(await decodeAll(cut(bytes, [8, 10]))).toEqual([{ data: 'a😀b' }]);
  });

  it('decodes a CRLF stream whose line ends are split across chunks', async () => {
    expect(await decodeAll(['data: a\r', '\n\r', '\ndata: b\r\n\r', '\n'])).toEqual([{ data: 'a' }, { data: 'b' }]);
  });

  it('dispatches a final event whose blank line is missing but whose last line is complete', async () => {
    expect(await decodeAll(['data: a\n\ndata: [DONE]\n'])).toEqual([{ data: 'a' }, { data: '[DONE]' }]);
  });

  it('drops a final event cut off in the middle of a line', async () => {
    expect(await decodeAll(['data: a\n\ndata: {"partial'])).toEqual([{ data: 'a' }]);
  });

  it('closes the source when the consumer stops early', async () => {
    let closed = false;
    async function* source(): AsyncGenerator<Uint8Array> {
      try {
        yield Buffer.from('data: 1\n\ndata: 2\n\n');
        yield Buffer.from('data: 3\n\n');
      } finally {
        closed = true;
      }
    }
    for await (const event of decodeSse(source())) {
      expect(event.data).toBe('1');
      break;
    }
    expect(closed).toBe(true);
  });
});
