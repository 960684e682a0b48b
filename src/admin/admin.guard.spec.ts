// The module object itself (not an import namespace), whose property the guard reads at each call.
import crypto = require('node:crypto');
import type { ExecutionContext } from '@nestjs/common';
import { GatewayError } from '../common/gateway-error';
import { AdminGuard } from './admin.guard';

function contextWith(authorization: string | undefined): ExecutionContext {
  const request = { headers: authorization === undefined ? {} : { authorization } };
  return { switchToHttp: () => ({ getRequest: () => request }) } as unknown as ExecutionContext;
}

describe(AdminGuard.name, () => {
  const token = 'admin-token-of-a-certain-length';
  const guard = new AdminGuard(token);
  let compare: jest.SpyInstance;

  beforeEach(() => {
    compare = jest.spyOn(crypto, 'timingSafeEqual');
  });

  afterEach(() => compare.mockRestore());

  it('lets the right token through, compared with timingSafeEqual', () => {
    expect(guard.canActivate(contextWith(`Bearer ${token}`))).toBe(true);
    expect(compare).toHaveBeenCalledTimes(1);
  });

  it.each([
    ['shorter', 'a'],
    ['as long but different', token.replace(/.$/, 'X')],
    ['much longer', 'x'.repeat(10_000)],
    ['empty', ''],
  ])('compares a %s token in constant time over two 32-byte digests, and refuses it with 401', (_, presented) => {
    const attempt = () => guard.canActivate(contextWith(`Bearer ${presented}`));

    expect(attempt).toThrow(GatewayError);
    expect(attempt).toThrow('The admin token is not valid.');
    expect(compare).toHaveBeenCalled();
    for (const [left, right] of compare.mock.calls) {
      expect([left.length, right.length]).toEqual([32, 32]);
    }
  });

  it('compares even when no Authorization header is sent', () => {
    expect(() => guard.canActivate(contextWith(undefined))).toThrow('The admin token is not valid.');
    expect(compare).toHaveBeenCalledTimes(1);
  });

  it('answers 404 without an admin token configured', () => {
    expect(() => new AdminGuard(undefined).canActivate(contextWith(`Bearer ${token}`))).toThrow('No such endpoint.');
  });
});
