import { Clock } from '../common/clock';
import { TranslationContextProvider } from './translation-context.provider';

describe(TranslationContextProvider.name, () => {
  it('makes ids of the prefix and 24 base64url characters, none repeated across refills of its random pool', () => {
    const context = new TranslationContextProvider(new Clock());
    // 256 ids per fill of the pool: 2,000 span several fills.
    const ids = Array.from({ length: 2_000 }, () => context.newId('resp'));
    for (const id of ids) expect(id).toMatch(/^resp_[A-Za-z0-9_-]{24}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('tells time in whole Unix seconds from its clock', () => {
    const clock = new Clock();
    jest.spyOn(clock, 'now').mockReturnValue(1_764_000_000_999);
    expect(new TranslationContextProvider(clock).now()).toBe(1_764_000_000);
  });
});
