import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';

/** Token figures priced per 1M tokens, summed, rounded once (half up) to whole nano-units, as the gateway bills them. */
export function tokenCost(priced: Array<[tokens: number, pricePerMillion: bigint]>): bigint {
  const total = priced.reduce((sum, [tokens, price]) => sum + BigInt(tokens) * price, 0n);
  return (total + 500_000n) / 1_000_000n;
}

/**
 * The official openai and anthropic clients on a gateway, with one key, no retries, and the
 * `X-Request-Id` of every answer they receive (streams included) kept in `requestIds`, in order.
 */
export function recordingClients(url: string, apiKey: string): { openai: OpenAI; anthropic: Anthropic; requestIds: string[] } {
  const requestIds: string[] = [];
  const fetchKeepingIds = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const response = await fetch(input, init);
    requestIds.push(response.headers.get('x-request-id') ?? '');
    return response;
  };
  return {
    openai: new OpenAI({ baseURL: `${url}/v1`, apiKey, maxRetries: 0, timeout: 10_000, fetch: fetchKeepingIds }),
    anthropic: new Anthropic({ baseURL: url, apiKey, maxRetries: 0, timeout: 10_000, fetch: fetchKeepingIds }),
    requestIds,
  };
}
