import type { UsageDraft } from '../../src/metering/usage-draft';

/** A usage record of a plain chat call, with the given fields instead. */
export function usageDraft(fields: Partial<UsageDraft> = {}): UsageDraft {
  return {
    requestId: 'req-1',
    clientRequestId: null,
    keyId: '6a1c0d2e-4b5f-4c3a-9d8e-7f6a5b4c3d2e',
    ownerId: 'team-a',
    model: 'chat-model',
    interface: 'chat_completions',
    line: 'line-a',
    translatedTo: null,
    status: 200,
    errorCode: null,
    stream: false,
    usage: { input_tokens: 12, output_tokens: 7 },
    costNano: 1_500n,
    startedAt: new Date(Date.UTC(2026, 10, 26, 1, 2, 3, 4)),
    durationMs: 15,
    upstreamHeadersMs: 9,
    tags: null,
    endUser: null,
    linesTried: null,
    priceSheet: null,
    priceBasis: null,
    ...fields,
  };
}
