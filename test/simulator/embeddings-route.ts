import { createHash } from 'node:crypto';
import type { Route } from './simulator-types';

/**
 * OpenAI Embeddings: `POST /v1/embeddings`. Vectors are unit length and derived from a hash
 * of each input, so the same text always gets the same vector.
 * @see https://platform.openai.com/docs/api-reference/embeddings/create
 */

/** Small on purpose: tests compare whole vectors. `dimensions` in the request overrides it. */
export const DEFAULT_DIMENSIONS = 8;

type EmbeddingInput = string | number[];

export const embeddingsRoute: Route = {
  vendor: 'openai',
  async handle(context) {
    const body = context.body;
    if (typeof body.model !== 'string') return context.reject(400, 'you must provide a model parameter');
    const inputs = normalizeInputs(body.input);
    if (inputs === undefined) return context.reject(400, "'input' must be a string, an array of strings or an array of token arrays.");
    const dimensions = typeof body.dimensions === 'number' && body.dimensions > 0 ? body.dimensions : DEFAULT_DIMENSIONS;
    const base64 = body.encoding_format === 'base64';
    const data = inputs.map((input, index) => {
      const vector = embeddingVector(input, dimensions);
      return { object: 'embedding', index, embedding: base64 ? encodeBase64(vector) : vector };
    });
    const promptTokens = inputs.reduce((sum, input) => sum + inputTokens(input), 0);
    return context.json(200, {
      object: 'list',
      data,
      model: body.model,
      usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
    });
  },
};

function normalizeInputs(input: unknown): EmbeddingInput[] | undefined {
  if (typeof input === 'string') return [input];
  if (!Array.isArray(input) || input.length === 0) return undefined;
  if (input.every((item) => typeof item === 'string')) return input as string[];
  if (input.every((item) => typeof item === 'number')) return [input as number[]];
  if (input.every((item) => Array.isArray(item) && item.every((token) => typeof token === 'number'))) {
    return input as number[][];
  }
  return undefined;
}

/** Text counts a quarter of its UTF-8 bytes; a token array counts its length. */
export function inputTokens(input: EmbeddingInput): number {
  return typeof input === 'string' ? Math.ceil(Buffer.byteLength(input, 'utf8') / 4) : input.length;
}

/** Float32 values (as the base64 form carries), normalised to length 1. */
export function embeddingVector(input: EmbeddingInput, dimensions: number): number[] {
  const seed = JSON.stringify(input);
  const raw: number[] = [];
  for (let index = 0; index < dimensions; index++) {
    const digest = createHash('sha256').update(`${seed}#${index}`).digest();
    raw.push(digest.readUInt32LE(0) / 0xffffffff - 0.5);
  }
  const length = Math.hypot(...raw) || 1;
  return raw.map((value) => Math.fround(value / length));
}

/** Little-endian float32 bytes, the layout the API and the SDKs' decoders use. */
export function encodeBase64(vector: number[]): string {
  const bytes = Buffer.alloc(vector.length * 4);
  vector.forEach((value, index) => bytes.writeFloatLE(value, index * 4));
  return bytes.toString('base64');
}
