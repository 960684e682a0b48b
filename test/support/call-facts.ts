import type { CallFacts } from '../../src/observability/call-facts';

/** The facts of a native chat call answered 200 on line-a in one attempt, with the given fields instead. */
export function callFacts(fields: Partial<CallFacts> = {}): CallFacts {
  return {
    requestId: 'request-1',
    clientRequestId: null,
    keyPrefix: 'gk-team-',
    owner: 'team-a',
    method: 'POST',
    route: '/v1/chat/completions',
    entry: 'chat_completions',
    model: 'chat-model',
    line: 'line-a',
    attempts: 1,
    linesTried: null,
    translatedTo: null,
    stream: false,
    status: 200,
    errorCode: null,
    durationMs: 60,
    upstreamHeadersMs: 5,
    upstreamMs: 40,
    firstByteMs: 50,
    usage: { input_tokens: 3, output_tokens: 7 },
    costNano: 90n,
    ...fields,
  };
}
