import OpenAI from 'openai';
import { DEFAULT_DIMENSIONS } from './embeddings-route';
import { UpstreamSimulator } from './upstream-simulator';

describe('UpstreamSimulator embeddings', () => {
  const simulator = new UpstreamSimulator({ apiKey: 'sk-embed' });
  let client: OpenAI;

  beforeAll(async () => {
    const baseUrl = await simulator.start();
    client = new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey: 'sk-embed', maxRetries: 0 });
  });
  afterAll(() => simulator.stop());
  beforeEach(() => simulator.reset());

  const lengthOf = (vector: number[]) => Math.hypot(...vector);

  it('answers float vectors of unit length, one per input, with usage', async () => {
    const result = await client.embeddings.create({ model: 'embed-1', input: ['alpha', 'beta gamma'], encoding_format: 'float' });

    expect(result).toMatchObject({ object: 'list', model: 'embed-1', usage: { prompt_tokens: 2 + 3, total_tokens: 5 } });
    expect(result.data.map((item) => [item.object, item.index])).toEqual([
      ['embedding', 0],
      ['embedding', 1],
    ]);
    for (const item of result.data) {
      expect(item.embedding).toHaveLength(DEFAULT_DIMENSIONS);
      expect(lengthOf(item.embedding)).toBeCloseTo(1, 5);
    }
    expect(result.data[0].embedding).not.toEqual(result.data[1].embedding);
  });

  it('gives the same vector for the same text, in base64 as the SDK asks by default', async () => {
    const asFloats = await client.embeddings.create({ model: 'embed-1', input: 'alpha', encoding_format: 'float' });
    const decoded = await client.embeddings.create({ model: 'embed-1', input: 'alpha' });

    expect(simulator.requests[1].json).toMatchObject({ encoding_format: 'base64' });
    expect(typeof (simulator.requests[1].json as { input: unknown }).input).toBe('string');
    expect(Array.from(decoded.data[0].embedding)).toEqual(asFloats.data[0].embedding);
  });

  it('honours dimensions and counts token arrays by their length', async () => {
    const result = await client.embeddings.create({
      model: 'embed-1',
      input: [[1, 2, 3, 4]],
      dimensions: 3,
      encoding_format: 'float',
    });

    expect(result.data[0].embedding).toHaveLength(3);
    expect(result.usage.prompt_tokens).toBe(4);
  });
});
