import { randomBytes } from 'node:crypto';
import { secretKeyFrom } from '../config/settings/catalog.settings';
import { lastFour, LineSecrets, referencedVariable } from './line-secrets';

describe(LineSecrets.name, () => {
  const key = randomBytes(32);

  it('opens what it sealed, and seals the same key differently each time', () => {
    const secrets = new LineSecrets(key);

    const once = secrets.seal('sk-vendor-0123456789');
    const twice = secrets.seal('sk-vendor-0123456789');

    expect(secrets.open(once)).toBe('sk-vendor-0123456789');
    expect(once).not.toBe(twice);
    expect(once).not.toContain('sk-vendor');
  });

  it('refuses to open under another key or after a change to the sealed text', () => {
    const sealed = new LineSecrets(key).seal('sk-vendor-0123456789');
    const bytes = Buffer.from(sealed.slice(3), 'base64');
    bytes[bytes.length - 1] ^= 1;

    expect(() => new LineSecrets(randomBytes(32)).open(sealed)).toThrow();
    expect(() => new LineSecrets(key).open(`v1:${bytes.toString('base64')}`)).toThrow();
  });

  it('cannot seal or open without a key, saying which variable is missing', () => {
    const secrets = new LineSecrets(undefined);

    expect(secrets.canSeal).toBe(false);
    expect(() => secrets.seal('sk')).toThrow('GATEWAY_SECRET_KEY');
    expect(() => secrets.open('v1:AAAA')).toThrow('GATEWAY_SECRET_KEY');
  });
});

describe(secretKeyFrom.name, () => {
  it('reads 32 bytes as 64 hex digits or as base64, and nothing when unset', () => {
    const key = randomBytes(32);

    expect(secretKeyFrom({ GATEWAY_SECRET_KEY: key.toString('hex') })).toEqual(key);
    expect(secretKeyFrom({ GATEWAY_SECRET_KEY: key.toString('base64') })).toEqual(key);
    expect(secretKeyFrom({})).toBeUndefined();
  });

  it('refuses another length, naming the variable and not the value', () => {
    let message = '';
    try {
      secretKeyFrom({ GATEWAY_SECRET_KEY: 'too-short-secret' });
    } catch (error) {
      message = (error as Error).message;
    }

    expect(message).toContain('GATEWAY_SECRET_KEY must be 32 bytes');
    expect(message).not.toContain('too-short-secret');
  });
});

describe('vendor key forms', () => {
  it('tells a ${VAR} reference from a literal, and shows four characters', () => {
    expect(referencedVariable('${OPENAI_KEY}')).toBe('OPENAI_KEY');
    expect(referencedVariable('sk-${OPENAI_KEY}')).toBeUndefined();
    expect(referencedVariable('sk-literal')).toBeUndefined();
    expect(lastFour('sk-literal-abcd')).toBe('abcd');
  });
});
