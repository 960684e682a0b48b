import { request as httpRequest } from 'node:http';
import { ModulesContainer } from '@nestjs/core';
import { PATH_METADATA } from '@nestjs/common/constants';
import { ENTRY_METADATA, EntryDeclaration } from '../src/forwarding/entry.decorator';
import { FORM_ROUTES } from '../src/request-body/content-type-rule';
import { SIMULATED_PNG_BASE64 } from './simulator/image-common';
import { ADMIN_TOKEN_FOR_TESTS, GatewayHarness } from './support/gateway-harness';
import { formBody, IMAGE_PATHS, rawRequest, RawAnswer } from './support/images-kit';
import { oneModelPerInterfaceYaml } from './support/test-config';
import { VENDOR_B, VENDOR_C, VIDEO_TEST_SETTINGS } from './support/video-kit';

/**
 * Content types. SPEC.md "Endpoints": JSON bodies use `Content-Type:
 * application/json`. A body of any other type, or without one, is refused with 400
 * invalid_request in the entry's error shape, naming application/json, before a byte of it is
 * read: nothing is forwarded and no usage is recorded. Parameters and letter case do not matter;
 * format A edits also take `multipart/form-data`; requests without a body are not judged.
 */

const KEY = 'gk-content-types-0001';

function configYaml(simulator: string): string {
  return oneModelPerInterfaceYaml(
    simulator,
    `
owners:
  - { id: team-a, kind: project, budget: 1000 }
keys:
  - { key: ${KEY}, owner: team-a, models: ["*"] }
`,
  );
}

type Shape = 'chat' | 'messages' | 'google' | 'speech';

interface Entry {
  name: string;
  path: string;
  shape: Shape;
  body: Record<string, unknown>;
  headers: Record<string, string>;
  /** 200 from the simulator; the admin API's create answers 201. */
  okStatus: number;
}

const BEARER = { authorization: `Bearer ${KEY}` };
const TEXT = [{ role: 'user', content: 'Hello there' }];
const PROMPT = 'A red fox in fresh snow';
const entry = (name: string, path: string, shape: Shape, body: Record<string, unknown>): Entry => ({ name, path, shape, body, headers: BEARER, okStatus: 200 });
const ENTRIES: Entry[] = [
  entry('chat completions', '/v1/chat/completions', 'chat', { model: 'chat-model', messages: TEXT }),
  entry('responses', '/v1/responses', 'chat', { model: 'chat-model', input: 'Hello there' }),
  entry('messages', '/v1/messages', 'messages', { model: 'messages-model', max_tokens: 32, messages: TEXT }),
  entry('count_tokens', '/v1/messages/count_tokens', 'messages', { model: 'messages-model', messages: TEXT }),
  entry('embeddings', '/v1/embeddings', 'chat', { model: 'embed-model', input: 'Hello there' }),
  entry('images generations', IMAGE_PATHS.generations, 'chat', { model: 'image-a', prompt: PROMPT, size: '1024x1024' }),
  entry('images edits', IMAGE_PATHS.edits, 'chat', {
    model: 'image-a',
    prompt: PROMPT,
    images: [{ image_url: `data:image/png;base64,${SIMULATED_PNG_BASE64}` }],
  }),
  entry('vendor-b images', IMAGE_PATHS.vendorB, 'chat', { model: 'image-b', prompt: PROMPT, size: '1K' }),
  entry('generateContent', IMAGE_PATHS.generateContent('image-c'), 'google', {
    contents: [{ role: 'user', parts: [{ text: PROMPT }] }],
    generationConfig: { responseModalities: ['TEXT', 'IMAGE'] },
  }),
  entry('speech', IMAGE_PATHS.speech, 'speech', { model: 'speech', text: 'Hello there', stream: false }),
  entry('vendor-c video submit', VENDOR_C.submit, 'chat', { model: 'video-c', content: [{ type: 'text', text: PROMPT }] }),
  entry('vendor-b video submit', VENDOR_B.submit, 'chat', { model: 'video-b', content: [{ type: 'text', text: PROMPT }] }),
  {
    name: 'admin owners',
    path: '/admin/owners',
    shape: 'chat',
    body: { id: 'made-by-test', kind: 'project' },
    headers: { authorization: `Bearer ${ADMIN_TOKEN_FOR_TESTS}` },
    okStatus: 201,
  },
];

/** The refused types; undefined: no Content-Type header at all. */
const REFUSED_TYPES: Array<[string, string | undefined]> = [
  ['text/plain', 'text/plain'],
  ['text/html', 'text/html'],
  ['application/xml', 'application/xml'],
  ['application/octet-stream', 'application/octet-stream'],
  ['application/x-www-form-urlencoded', 'application/x-www-form-urlencoded'],
  ['no content type', undefined],
];

function parse(text: string): any {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** 400 invalid_request in the entry's own shape, with a request id; gives the message. */
function expectRefusal(entry: Entry, answer: RawAnswer): string {
  const body = parse(answer.text);
  expect({ entry: entry.name, status: answer.status }).toEqual({ entry: entry.name, status: 400 });
  const message = expect.any(String);
  switch (entry.shape) {
    case 'chat':
      expect(body).toEqual({ error: { message, type: 'invalid_request_error', code: null } });
      break;
    case 'messages':
      expect(body).toEqual({ type: 'error', error: { type: 'invalid_request_error', message, code: null } });
      expect(answer.headers['request-id']).toBe(answer.headers['x-request-id']);
      break;
    case 'google':
      expect(body).toEqual({ error: { code: 400, message, status: 'INVALID_ARGUMENT', details: [expect.objectContaining({ reason: 'INVALID_REQUEST' })] } });
      break;
    case 'speech':
      expect(body).toEqual({ error: { message, type: 'invalid_request_error', code: null }, base_resp: { status_code: 2013, status_msg: body.error.message } });
      break;
  }
  expect(answer.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  return body.error.message;
}

/** The paths of the routes declared `@Entry(..., { forms: true })`, read from Nest's metadata. */
function declaredFormRoutes(gateway: GatewayHarness): string[] {
  const routes: string[] = [];
  for (const module of gateway.app.get(ModulesContainer).values()) {
    for (const wrapper of module.controllers.values()) {
      const type = wrapper.metatype as { prototype: Record<string, unknown> } | null;
      if (!type) continue;
      const base = String(Reflect.getMetadata(PATH_METADATA, type) ?? '');
      for (const name of Object.getOwnPropertyNames(type.prototype)) {
        const handler = type.prototype[name];
        if (typeof handler !== 'function') continue;
        const declaration = Reflect.getMetadata(ENTRY_METADATA, handler) as EntryDeclaration | undefined;
        if (declaration?.forms)
          routes.push(
            `/${[base, String(Reflect.getMetadata(PATH_METADATA, handler))]
              .map((part) => part.replace(/^\/+|\/+$/g, ''))
              .filter(Boolean)
              .join('/')}`,
          );
      }
    }
  }
  return routes.sort();
}

describe('content types', () => {
  let gateway: GatewayHarness;

  beforeAll(async () => {
    gateway = await GatewayHarness.start({ configYaml, settings: { video: VIDEO_TEST_SETTINGS } });
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  beforeEach(() => gateway.simulator.reset());

  function post(entry: Entry, body: Buffer | string, contentType: string | undefined): Promise<RawAnswer> {
    const headers: Record<string, string> = { ...entry.headers, 'content-length': String(Buffer.byteLength(body)) };
    if (contentType !== undefined) headers['content-type'] = contentType;
    return rawRequest(`${gateway.url}${entry.path}`, { headers, body });
  }

  /** Refused before forwarding: nothing reached the upstream and no usage record exists. */
  async function expectNothingForwarded(answer: RawAnswer): Promise<void> {
    expect(gateway.simulator.requests).toHaveLength(0);
    expect(await gateway.usageRecord(String(answer.headers['x-request-id']))).toBeNull();
  }

  describe.each(ENTRIES)('$name', (entry) => {
    it.each(REFUSED_TYPES)('refuses a JSON body sent with %s: 400 naming application/json, nothing forwarded or recorded', async (_, contentType) => {
      const answer = await post(entry, JSON.stringify(entry.body), contentType);

      const message = expectRefusal(entry, answer);
      expect(message).toContain('Content-Type: application/json');
      expect(message).toContain(contentType === undefined ? 'has no Content-Type' : `has Content-Type ${contentType}`);
      await expectNothingForwarded(answer);
    });

    it('takes application/json in any letter case and with parameters', async () => {
      const answer = await post(entry, JSON.stringify(entry.body), 'Application/JSON; charset=utf-8');

      expect({ entry: entry.name, status: answer.status, text: answer.status === entry.okStatus ? '' : answer.text }).toEqual({
        entry: entry.name,
        status: entry.okStatus,
        text: '',
      });
    });
  });

  describe.each(ENTRIES.filter((entry) => entry.path !== IMAGE_PATHS.edits))('a form on $name', (entry) => {
    it('is refused with 400 naming application/json and the route that takes forms, nothing forwarded or recorded', async () => {
      const form = formBody(Object.entries(entry.body).map(([name, value]) => [name, typeof value === 'string' ? value : JSON.stringify(value)]));
      const answer = await post(entry, form.body, form.contentType);

      const message = expectRefusal(entry, answer);
      expect(message).toContain('has Content-Type multipart/form-data; this endpoint takes Content-Type: application/json.');
      expect(message).toContain('Forms are taken only by /v1/images/edits.');
      await expectNothingForwarded(answer);
    });
  });

  describe('image edits (format A)', () => {
    const edits = ENTRIES.find((entry) => entry.path === IMAGE_PATHS.edits)!;

    it('takes a multipart form, in any letter case', async () => {
      const form = formBody([
        ['model', 'image-a'],
        ['prompt', PROMPT],
        ['image', { filename: 'in.png', type: 'image/png', bytes: Buffer.from(SIMULATED_PNG_BASE64, 'base64') }],
      ]);
      expect((await post(edits, form.body, form.contentType)).status).toBe(200);
      // Forwarded as sent: the simulator's own form parser (undici's) then refuses the mixed case.
      gateway.simulator.reset();
      await post(edits, form.body, form.contentType.replace('multipart/form-data', 'Multipart/Form-Data'));
      expect(gateway.simulator.requests).toHaveLength(1);
    });

    it('refuses other types naming both types it takes', async () => {
      const answer = await post(edits, JSON.stringify(edits.body), 'text/plain');

      expect(expectRefusal(edits, answer)).toBe(
        'The request body has Content-Type text/plain; this endpoint takes Content-Type: application/json or multipart/form-data.',
      );
      await expectNothingForwarded(answer);
    });

    it('is the only route that takes forms: the form routes are the routes declared with forms', () => {
      expect(declaredFormRoutes(gateway)).toEqual([...FORM_ROUTES].sort());
    });
  });

  describe('requests without a body', () => {
    it('leaves GET, DELETE and an empty POST to their routes whatever their Content-Type', async () => {
      const models = await rawRequest(`${gateway.url}/v1/models`, { method: 'GET', headers: { ...BEARER, 'content-type': 'text/plain' } });
      expect(models.status).toBe(200);
      const cancel = await rawRequest(`${gateway.url}${VENDOR_C.cancel('vtask_unknown')}`, {
        method: 'DELETE',
        headers: { ...BEARER, 'content-type': 'text/plain' },
      });
      expect({ status: cancel.status, code: parse(cancel.text).error.code }).toEqual({ status: 404, code: 'not_found' });
      const admin = { authorization: `Bearer ${ADMIN_TOKEN_FOR_TESTS}` };
      for (const contentType of ['text/plain', undefined]) {
        const headers: Record<string, string> = { ...admin, 'content-length': '0', ...(contentType ? { 'content-type': contentType } : {}) };
        const disable = await rawRequest(`${gateway.url}/admin/keys/no-such-key/disable`, { headers });
        expect({ contentType, status: disable.status, code: parse(disable.text).error.code }).toEqual({ contentType, status: 404, code: 'not_found' });
      }
    });

    it('leaves a path no route serves to its 404', async () => {
      const answer = await rawRequest(`${gateway.url}/v1/no-such-endpoint`, { headers: { ...BEARER, 'content-type': 'text/plain' }, body: '{}' });
      expect({ status: answer.status, code: parse(answer.text).error.code }).toEqual({ status: 404, code: 'not_found' });
    });
  });

  it('refuses before reading the body: the answer comes while the announced body is still unsent', async () => {
    const answer = await new Promise<RawAnswer>((resolve, reject) => {
      const request = httpRequest(
        `${gateway.url}/v1/chat/completions`,
        // Without an answer the request is given up, so the gateway can still stop.
        {
          method: 'POST',
          agent: false,
          signal: AbortSignal.timeout(5_000),
          headers: { ...BEARER, 'content-type': 'text/plain', 'content-length': String(1024 * 1024) },
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () => {
            request.destroy();
            resolve({ status: response.statusCode ?? 0, headers: response.headers, text: Buffer.concat(chunks).toString('utf8') });
          });
        },
      );
      request.on('error', reject);
      request.flushHeaders();
    });

    expect(expectRefusal(ENTRIES[0], answer)).toContain('has Content-Type text/plain');
    expect(gateway.simulator.requests).toHaveLength(0);
  });
});
