import type { FastifyRequest } from 'fastify';
import type { ServerResponse } from 'node:http';
import type { AdmittedCall } from '../forwarding/request-state';
import type { Principal } from '../auth/principal';
import type { ModelConfig } from '../config/gateway-config';
import { callFactsOf, isProbe } from './call-facts';

const PRINCIPAL = { keyId: 'key-1', displayPrefix: 'gk-team-', ownerId: 'team-a' } as Principal;
const CALL = { entry: 'messages', translateTo: 'responses', model: { id: 'chat-model' } as ModelConfig, stream: true } as AdmittedCall;

/** `route` null: a path no route matched. */
function request(fields: Partial<FastifyRequest> = {}, route: string | null = '/v1/messages'): FastifyRequest {
  return {
    id: 'request-1',
    method: 'POST',
    headers: { 'x-client-request-id': 'client-7', authorization: 'Bearer gk-team-secret' },
    routeOptions: { url: route ?? undefined },
    startedAt: 1_000,
    ...fields,
  } as unknown as FastifyRequest;
}

function response(statusCode: number, finished = true, headWrittenAt = 0, endedAt = 0): ServerResponse {
  return { statusCode, writableFinished: finished, headWrittenAt, endedAt } as unknown as ServerResponse;
}

describe(callFactsOf.name, () => {
  it("takes a forwarded call's status, line, usage and times from its record", () => {
    const facts = callFactsOf(
      request({
        principal: PRINCIPAL,
        call: CALL,
        forwarded: {
          upstreamStartedAt: 1_004,
          attempts: [
            { line: 'line-b', outcome: '5xx', status: 503, startedAt: 1_004, endedAt: 1_010 },
            { line: 'line-a', outcome: 'answered', status: 200, startedAt: 1_010, endedAt: 1_024 },
          ],
          upstreamEndedAt: 1_054,
          responseClosed: false,
          record: {
            interface: 'messages',
            line: 'line-a',
            translatedTo: 'responses',
            status: 200,
            errorCode: null,
            usage: { input_tokens: 3 },
            costNano: 9n,
            upstreamHeadersMs: 20,
          },
        },
      }),
      response(200, true, 1_030),
      1_060,
    );

    expect(facts).toEqual({
      requestId: 'request-1',
      clientRequestId: 'client-7',
      keyPrefix: 'gk-team-',
      owner: 'team-a',
      method: 'POST',
      route: '/v1/messages',
      entry: 'messages',
      model: 'chat-model',
      line: 'line-a',
      attempts: 2,
      linesTried: ['line-b', 'line-a'],
      translatedTo: 'responses',
      stream: true,
      status: 200,
      errorCode: null,
      durationMs: 60,
      upstreamHeadersMs: 20,
      upstreamMs: 50,
      firstByteMs: 30,
      usage: { input_tokens: 3 },
      costNano: 9n,
    });
  });

  it("names a request refused before admission by its route, with the filter's error code and no model", () => {
    const facts = callFactsOf(request({ errorCode: 'invalid_api_key' }), response(401, true, 1_002), 1_003);

    expect(facts).toMatchObject({
      entry: '/v1/messages',
      model: null,
      keyPrefix: null,
      status: 401,
      errorCode: 'invalid_api_key',
      upstreamMs: null,
      firstByteMs: 2,
    });
  });

  it("ends the duration when the answer's end was written, not when the call is reported", () => {
    expect(callFactsOf(request(), response(200, true, 1_030, 1_040), 1_900).durationMs).toBe(40);
    expect(callFactsOf(request(), response(200, false, 1_030), 1_900).durationMs).toBe(900);
  });

  it('names a request to an unknown path "none"', () => {
    expect(callFactsOf(request({ errorCode: 'not_found' }, null), response(404), 1_001)).toMatchObject({ entry: 'none', route: null });
  });

  it('gives status 499 client_closed to a response that closed before it was complete', () => {
    const facts = callFactsOf(request({ principal: PRINCIPAL, call: CALL }), response(200, false), 1_500);

    expect(facts).toMatchObject({ status: 499, errorCode: 'client_closed', entry: 'messages', translatedTo: 'responses', firstByteMs: null });
  });

  it('keeps the client request id only when it is 1 to 128 printable ASCII characters', () => {
    const long = request({ headers: { 'x-client-request-id': 'x'.repeat(129) } } as Partial<FastifyRequest>);

    expect(callFactsOf(long, response(200), 1_001).clientRequestId).toBeNull();
  });
});

describe(isProbe.name, () => {
  it('is true for the health probes and the metrics scrape only', () => {
    expect([isProbe('/metrics'), isProbe('/metrics?x=1'), isProbe('/health/live'), isProbe('/health/ready')]).toEqual([true, true, true, true]);
    expect([isProbe('/v1/chat/completions'), isProbe('/admin/owners/health'), isProbe('/healthz'), isProbe('/metrics/x')]).toEqual([
      false,
      false,
      false,
      false,
    ]);
  });
});
