import { withKeepAlive } from './keep-alive';

async function* delayed(items: Array<[number, string]>): AsyncGenerator<string> {
  for (const [delayMs, item] of items) {
    await new Promise((resolve) => setTimeout(resolve, delayMs));
    yield item;
  }
}

async function collect(source: AsyncIterable<string>): Promise<string[]> {
  const items: string[] = [];
  for await (const item of source) items.push(item);
  return items;
}

describe(withKeepAlive.name, () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('sends a ping for every interval of silence and keeps every item in order', async () => {
    const result = collect(withKeepAlive(delayed([[10, 'a'], [350, 'b'], [5, 'c']]), 100, () => 'ping'));
    await jest.advanceTimersByTimeAsync(1_000);
    expect(await result).toEqual(['a', 'ping', 'ping', 'ping', 'b', 'c']);
  });

  it('sends no ping while items keep coming', async () => {
    const result = collect(withKeepAlive(delayed([[50, 'a'], [50, 'b'], [50, 'c']]), 100, () => 'ping'));
    await jest.advanceTimersByTimeAsync(1_000);
    expect(await result).toEqual(['a', 'b', 'c']);
  });

  it('closes the source when the consumer stops early', async () => {
    let closed = false;
    async function* source(): AsyncGenerator<string> {
      try {
        yield 'a';
        yield 'b';
      } finally {
        closed = true;
      }
    }
    for await (const item of withKeepAlive(source(), 100, () => 'ping')) {
      expect(item).toBe('a');
      break;
    }
    expect(closed).toBe(true);
  });
});
