import { createServer, ServerResponse, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { carryRequestId, endedAt, headWrittenAt, TimedServerResponse } from './timed-response';

/** A server answering with `answer`, reporting its response once closed. */
async function serve(answer: (response: TimedServerResponse) => void): Promise<{ server: Server; url: string; closed: Promise<TimedServerResponse> }> {
  let report!: (response: TimedServerResponse) => void;
  const closed = new Promise<TimedServerResponse>((resolve) => (report = resolve));
  const server = createServer({ ServerResponse: TimedServerResponse }, (_request, response) => {
    response.once('close', () => report(response as TimedServerResponse));
    answer(response as TimedServerResponse);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, closed };
}

describe(TimedServerResponse.name, () => {
  it('notes when the head was written by writeHead, and keeps its headers', async () => {
    const { server, url, closed } = await serve((response) => {
      response.writeHead(201, { 'x-kept': 'yes' });
      response.end('done');
    });
    const before = performance.now();
    const answer = await fetch(url);
    const response = await closed;
    server.close();

    expect(answer.status).toBe(201);
    expect(answer.headers.get('x-kept')).toBe('yes');
    expect(await answer.text()).toBe('done');
    expect(headWrittenAt(response)).toBeGreaterThan(before);
  });

  it("notes when the answer's end was written, once, and gives `now` for an answer never ended", async () => {
    let endedBefore = 0;
    const { server, url, closed } = await serve((response) => {
      response.writeHead(200);
      response.write('a');
      endedBefore = endedAt(response, -1);
      setTimeout(() => response.end('b'), 20);
    });
    const answer = await fetch(url);
    expect(await answer.text()).toBe('ab');
    const response = await closed;
    server.close();

    expect(endedBefore).toBe(-1);
    expect(endedAt(response, -1)).toBeGreaterThanOrEqual(headWrittenAt(response) + 15);
    const noted = endedAt(response, -1);
    response.end();
    expect(endedAt(response, -1)).toBe(noted);
    expect(endedAt(new ServerResponse({ method: 'GET' } as never), 7)).toBe(7);
  });

  it('notes the implicit head of a first write, and keeps a reason phrase', async () => {
    const { server, url, closed } = await serve((response) => {
      response.statusCode = 202;
      response.write('a');
      response.end('b');
    });
    const answer = await fetch(url);
    const response = await closed;
    server.close();

    expect(answer.status).toBe(202);
    expect(await answer.text()).toBe('ab');
    expect(headWrittenAt(response)).toBeGreaterThan(0);
  });

  describe('request id', () => {
    async function headersOf(answer: (response: TimedServerResponse) => void, forMessages = false): Promise<Headers> {
      const { server, url } = await serve((response) => {
        carryRequestId(response, 'request-7', forMessages);
        answer(response);
      });
      const reply = await fetch(url);
      await reply.text();
      server.close();
      return reply.headers;
    }

    it.each<[string, (response: TimedServerResponse) => void]>([
      ['a headers object', (response) => response.writeHead(200, { 'x-kept': 'yes' }).end()],
      ['a reason phrase and a headers object', (response) => response.writeHead(200, 'Fine', { 'x-kept': 'yes' }).end()],
      ['a headers array', (response) => response.writeHead(200, ['x-kept', 'yes']).end()],
      [
        'headers set before, none given',
        (response) => {
          response.setHeader('x-kept', 'yes');
          response.writeHead(200).end();
        },
      ],
      [
        'headers set before and given',
        (response) => {
          response.setHeader('x-kept', 'yes');
          response.writeHead(200, { 'x-also': 'yes' }).end();
        },
      ],
      [
        'the implicit head of a first write',
        (response) => {
          response.setHeader('x-kept', 'yes');
          response.end('body');
        },
      ],
    ])("is sent as x-request-id with %s, beside the answer's headers", async (_name, answer) => {
      const headers = await headersOf(answer);
      expect(headers.get('x-request-id')).toBe('request-7');
      expect(headers.get('x-kept')).toBe('yes');
      expect(headers.get('request-id')).toBeNull();
    });

    it('is sent with the answer written after a head that failed (an invalid header value)', async () => {
      const headers = await headersOf((response) => {
        expect(() => response.writeHead(200, { 'x-bad': 'line\nbreak' })).toThrow();
        response.writeHead(500, { 'x-kept': 'yes' }).end();
      });
      expect(headers.get('x-request-id')).toBe('request-7');
      expect(headers.get('x-kept')).toBe('yes');
    });

    it('is sent as request-id too for the messages entry points', async () => {
      const headers = await headersOf((response) => response.writeHead(200, {}).end(), true);
      expect(headers.get('x-request-id')).toBe('request-7');
      expect(headers.get('request-id')).toBe('request-7');
    });

    it('is set at once on a response that is not a TimedServerResponse', async () => {
      const server = createServer((_request, response) => {
        carryRequestId(response, 'request-8', true);
        expect(response).not.toBeInstanceOf(TimedServerResponse);
        expect(response).toBeInstanceOf(ServerResponse);
        expect(response.getHeader('x-request-id')).toBe('request-8');
        response.writeHead(200, { 'x-kept': 'yes' }).end();
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const reply = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
      server.close();
      expect(reply.headers.get('x-request-id')).toBe('request-8');
      expect(reply.headers.get('request-id')).toBe('request-8');
      expect(reply.headers.get('x-kept')).toBe('yes');
    });

    it('is left out when none was set', async () => {
      const { server, url } = await serve((response) => response.writeHead(200, {}).end());
      const reply = await fetch(url);
      server.close();
      expect(reply.headers.get('x-request-id')).toBeNull();
    });
  });

  it('is 0 for a plain response', () => {
    expect(headWrittenAt({} as TimedServerResponse)).toBe(0);
  });
});
