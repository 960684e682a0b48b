import { execFile } from 'node:child_process';
import { createServer, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';

/**
 * `npm run bench` probes the streams' time to first byte of all targets in turns
 * (bench/ttfb.mjs), so that a slow spell of the machine falls on every target alike. The
 * module is ES, so it runs in a child process; the two targets are servers of this test.
 */
const TTFB_MODULE = join(__dirname, '..', 'bench', 'ttfb.mjs');

interface Figures {
  streams: number;
  errors: number;
  ttfb_p50_ms: number | null;
  ttfb_p99_ms: number | null;
  complete_p50_ms: number | null;
}

/** A stream target: its first byte after `delayMs`, the end right after; `arrivals` records which target each request reached. */
function streamTarget(name: string, delayMs: number, arrivals: string[]): Promise<Server> {
  const server = createServer((request, response) => {
    arrivals.push(name);
    request.resume();
    request.on('end', () => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      setTimeout(() => response.end('data: {}\n\n'), delayMs);
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

async function probe(ports: Record<string, number>, seconds: number, sliceMs: number): Promise<Record<string, Figures>> {
  const requests = Object.fromEntries(
    Object.entries(ports).map(([name, port]) => [
      name,
      { url: `http://127.0.0.1:${port}/stream`, path: '/stream', headers: { 'content-type': 'application/json' }, body: '{}' },
    ]),
  );
  const script = `
    const { probeFirstBytes } = await import(${JSON.stringify(TTFB_MODULE)});
    const [requests, seconds, sliceMs] = JSON.parse(process.argv[1]);
    process.stdout.write(JSON.stringify(await probeFirstBytes(requests, seconds, sliceMs)));`;
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script, JSON.stringify([requests, seconds, sliceMs])], {
    encoding: 'utf8',
  });
  return JSON.parse(stdout) as Record<string, Figures>;
}

/** How often consecutive requests went to different targets. */
function switches(arrivals: string[]): number {
  let count = 0;
  for (let index = 1; index < arrivals.length; index++) if (arrivals[index] !== arrivals[index - 1]) count++;
  return count;
}

describe('bench: time to first byte probed in turns', () => {
  const arrivals: string[] = [];
  const servers: Server[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  });

  it('gives every target its share of short turns and tells their first bytes apart', async () => {
    servers.push(await streamTarget('quick', 0, arrivals), await streamTarget('slow', 20, arrivals));
    const [quick, slow] = servers.map((server) => (server.address() as AddressInfo).port);

    const figures = await probe({ quick, slow }, 1, 100);

    // Ten turns of 100 ms each, the order rotating (quick slow, slow quick, ...): the target changes once a round, not once in
    // all. A turn ends with its last stream, so on a loaded machine the turns run long and a target may use up its second a
    // few rounds early; probing one target after the other would give a single switch.
    expect(switches(arrivals)).toBeGreaterThanOrEqual(5);
    expect(figures.quick.errors).toBe(0);
    expect(figures.slow.errors).toBe(0);
    expect(figures.quick.streams).toBe(arrivals.filter((name) => name === 'quick').length);
    expect(figures.slow.streams).toBe(arrivals.filter((name) => name === 'slow').length);
    // The slow target held its first byte 20 ms: about 50 streams in its second, the quick one many more.
    expect(figures.slow.streams).toBeGreaterThan(20);
    expect(figures.slow.streams).toBeLessThanOrEqual(55);
    expect(figures.quick.streams).toBeGreaterThan(figures.slow.streams);
    expect(figures.slow.ttfb_p50_ms! - figures.quick.ttfb_p50_ms!).toBeGreaterThanOrEqual(18);
  });
});
