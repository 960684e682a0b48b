// The module object itself (not an import namespace), whose property the guard reads at each call.
import crypto = require('node:crypto');
import type { ExecutionContext } from '@nestjs/common';
import { GatewayError } from '../common/gateway-error';
import { AdminGuard } from './admin.guard';
import type { ConsoleSessions } from './console-sessions';

/** Bearer tokens never reach the console's sessions. */
const NO_SESSIONS = { find: () => Promise.reject(new Error('a bearer token was looked up as a session')) } as unknown as ConsoleSessions;

function contextWith(authorization: string | undefined, request: Record<string | symbol, unknown> = {}): ExecutionContext {
  Object.assign(request, { headers: authorization === undefined ? {} : { authorization } });
  return { switchToHttp: () => ({ getRequest: () => request }) } as unknown as ExecutionContext;
}

/** The actor the guard left on a request. */
function actorOf(request: Record<string | symbol, unknown>): unknown {
  return Object.getOwnPropertySymbols(request).map((symbol) => request[symbol])[0];
}

describe(AdminGuard.name, () => {
  const token = 'admin-token-of-a-certain-length';
  const guard = new AdminGuard([{ name: 'admin', token }], NO_SESSIONS);
  let compare: jest.SpyInstance;

  beforeEach(() => {
    compare = jest.spyOn(crypto, 'timingSafeEqual');
  });

  afterEach(() => compare.mockRestore());

  it('lets the right token through, compared with timingSafeEqual', async () => {
    await expect(guard.canActivate(contextWith(`Bearer ${token}`))).resolves.toBe(true);
    expect(compare).toHaveBeenCalledTimes(1);
  });

  it.each([
    ['shorter', 'a'],
    ['as long but different', token.replace(/.$/, 'X')],
    ['much longer', 'x'.repeat(10_000)],
    ['empty', ''],
  ])('compares a %s token in constant time over two 32-byte digests, and refuses it with 401', async (_, presented) => {
    const attempt = guard.canActivate(contextWith(`Bearer ${presented}`));

    await expect(attempt).rejects.toThrow(GatewayError);
    await expect(attempt).rejects.toThrow('The admin token is not valid.');
    expect(compare).toHaveBeenCalled();
    for (const [left, right] of compare.mock.calls) {
      expect([left.length, right.length]).toEqual([32, 32]);
    }
  });

  it('compares even when neither an Authorization header nor a console cookie is sent', async () => {
    await expect(guard.canActivate(contextWith(undefined))).rejects.toThrow('The admin token is not valid.');
    expect(compare).toHaveBeenCalledTimes(1);
  });

  it('compares against every named token, and names the one presented as the actor', async () => {
    const named = new AdminGuard(
      [
        { name: 'admin', token },
        { name: 'alice', token: 'alice-token' },
        { name: 'ci', token: 'ci-token' },
      ],
      NO_SESSIONS,
    );
    const request: Record<string | symbol, unknown> = {};

    await expect(named.canActivate(contextWith('Bearer alice-token', request))).resolves.toBe(true);
    expect(compare).toHaveBeenCalledTimes(3);
    expect(actorOf(request)).toBe('alice');
    await expect(named.canActivate(contextWith('Bearer nobody'))).rejects.toThrow('The admin token is not valid.');
  });

  it('answers 404 without an admin token configured', async () => {
    await expect(new AdminGuard([], NO_SESSIONS).canActivate(contextWith(`Bearer ${token}`))).rejects.toThrow('No such endpoint.');
  });
});
