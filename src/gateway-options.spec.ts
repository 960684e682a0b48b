import { defaultSettings } from './gateway-options';

describe('defaultSettings LOG_LEVEL', () => {
  it('is info when unset or empty', () => {
    expect(defaultSettings({}).logLevel).toBe('info');
    expect(defaultSettings({ LOG_LEVEL: '' }).logLevel).toBe('info');
  });

  it('takes any of pino\'s level names, in any case', () => {
    expect(defaultSettings({ LOG_LEVEL: 'warn' }).logLevel).toBe('warn');
    expect(defaultSettings({ LOG_LEVEL: ' DEBUG ' }).logLevel).toBe('debug');
    expect(defaultSettings({ LOG_LEVEL: 'silent' }).logLevel).toBe('silent');
  });

  it('refuses an unknown level, naming the variable and the levels', () => {
    expect(() => defaultSettings({ LOG_LEVEL: 'verbose' })).toThrow('LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "verbose"');
  });
});
