import type { ModelConfig } from '../config/gateway-config';
import { GatewayError } from '../common/gateway-error';
import { scanTopLevel } from '../request-body/json-scan';
import { parseForm } from '../request-body/multipart-form';
import type { AdmittedCall } from '../forwarding/request-state';
import { upstreamPathOf } from '../forwarding/native-route';
import type { UpstreamBody } from '../upstream/upstream-client';
import { GENERATE_CONTENT_ROUTE, generateContentModel, IMAGES_EDITS_ROUTE } from './image-routes';

function thrown(run: () => unknown): GatewayError {
  try {
    run();
  } catch (error) {
    if (error instanceof GatewayError) return error;
    throw error;
  }
  throw new Error('expected a GatewayError');
}

function bytesOf(body: UpstreamBody): Buffer {
  return Buffer.isBuffer(body) ? body : Buffer.concat(body as Buffer[]);
}

describe(generateContentModel.name, () => {
  it.each([
    ['gemini-2.5-flash-image:generateContent', 'gemini-2.5-flash-image'],
    ['image-model:generateContent', 'image-model'],
    ['a:b:generateContent', 'a:b'],
    ['tunedModels/x:generateContent', 'tunedModels/x'],
  ])('reads %j as the model %j', (target, model) => {
    expect(generateContentModel({ target })).toBe(model);
  });

  it.each([
    ['streamGenerateContent', 'image-model:streamGenerateContent', /"streamGenerateContent"/],
    ['countTokens', 'image-model:countTokens', /"countTokens"/],
    ['a method in another case', 'image-model:GenerateContent', /"GenerateContent"/],
    ['generateContent before another method', 'image-model:generateContent:countTokens', /"countTokens"/],
    ['no method', 'image-model', /no method/],
    ['an empty method', 'image-model:', /""/],
    ['no target', undefined, /no method/],
    ['an empty target', '', /no method/],
  ])('refuses %s with invalid_request', (_case, target, message) => {
    const error = thrown(() => generateContentModel({ target }));
    expect(error.code).toBe('invalid_request');
    expect(error.message).toMatch(/^Only generateContent is supported/);
    expect(error.message).toMatch(message);
  });

  it('refuses a path without a model', () => {
    const error = thrown(() => generateContentModel({ target: ':generateContent' }));
    expect(error.code).toBe('invalid_request');
    expect(error.message).toMatch(/names no model/);
  });
});

describe('image routes', () => {
  const model = { id: 'image-model', upstreamModel: 'publishers/vendor/gemini image' } as ModelConfig;

  it('puts the upstream model, each path segment encoded, in the generateContent path', () => {
    const body = Buffer.from('{"contents":[]}');
    const scan = scanTopLevel(body);
    if (!scan.ok) throw new Error(scan.message);
    const call: AdmittedCall = { entry: 'images_c', model, body, fields: scan.fields, stream: false };

    expect(upstreamPathOf(GENERATE_CONTENT_ROUTE, call)).toBe('/v1beta/models/publishers/vendor/gemini%20image:generateContent');
    expect(GENERATE_CONTENT_ROUTE.upstreamBody(call)).toBe(body);
  });

  it('sends an edits form with only the model part replaced', () => {
    const boundary = 'edits-boundary';
    const head = `--${boundary}\r\nContent-Disposition: form-data; name="image"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n\x89PNG\r\n--${boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\n`;
    const tail = `\r\n--${boundary}\r\nContent-Disposition: form-data; name="prompt"\r\n\r\nmodel\r\n--${boundary}--\r\n`;
    const body = Buffer.from(`${head}image-model${tail}`, 'latin1');
    const form = parseForm(body, boundary);
    if (!form.ok) throw new Error(form.message);
    const call: AdmittedCall = { entry: 'images_a', model, body, fields: new Map(), form: form.parts, stream: false };

    expect(bytesOf(IMAGES_EDITS_ROUTE.upstreamBody(call))).toEqual(
      Buffer.concat([Buffer.from(head, 'latin1'), Buffer.from(model.upstreamModel), Buffer.from(tail, 'latin1')]),
    );
  });
});
