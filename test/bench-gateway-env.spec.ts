import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

/**
 * How the bench scripts start the gateway (bench/gateway-env.mjs): the allocator tuning unless
 * the caller set its own, and $GATEWAY_NODE_OPTIONS as the gateway's NODE_OPTIONS, so a V8
 * setting is measured on the gateway alone. The module is ES, so it is called in a child process.
 */
function gatewayEnvWith(callerEnv: Record<string, string>, env: Record<string, string> = { PORT: '1' }): Record<string, string> {
  const script = `
    const { gatewayEnv } = await import(${JSON.stringify(join(__dirname, '..', 'bench', 'gateway-env.mjs'))});
    process.stdout.write(JSON.stringify(gatewayEnv(JSON.parse(process.argv[1]))));`;
  const { GLIBC_TUNABLES: _tunables, GATEWAY_NODE_OPTIONS: _options, NODE_OPTIONS: _node, ...rest } = process.env;
  const text = execFileSync(process.execPath, ['--input-type=module', '-e', script, JSON.stringify(env)], { encoding: 'utf8', env: { ...rest, ...callerEnv } });
  return JSON.parse(text) as Record<string, string>;
}

describe('the bench gateway environment', () => {
  it('tunes the allocator and leaves NODE_OPTIONS alone by default', () => {
    expect(gatewayEnvWith({})).toEqual({ GLIBC_TUNABLES: 'glibc.malloc.arena_max=2:glibc.malloc.mmap_threshold=131072', PORT: '1' });
  });

  it("gives the gateway $GATEWAY_NODE_OPTIONS as its NODE_OPTIONS, and keeps the caller's own tuning", () => {
    expect(gatewayEnvWith({ GATEWAY_NODE_OPTIONS: '--max-semi-space-size=16', GLIBC_TUNABLES: 'glibc.malloc.arena_max=1' })).toEqual({
      GLIBC_TUNABLES: 'glibc.malloc.arena_max=1',
      NODE_OPTIONS: '--max-semi-space-size=16',
      PORT: '1',
    });
  });
});
