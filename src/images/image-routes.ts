import type { AdmittedCall } from '../forwarding/request-state';
import { GatewayError } from '../common/gateway-error';
import { replacePart } from '../request-body/multipart-form';
import type { NativeRoute } from '../forwarding/native-route';
import { replaceModel } from '../forwarding/native-route';
import { upstreamBodyOf } from '../upstream/upstream-client';
import { imageRefusal } from './image-rules';
import { GenerateContentMeter, ImagesMeter, VendorBImagesMeter } from '../metering/image-meters';

/**
 * The image endpoints (SPEC.md "Images"): synchronous answers forwarded natively, refused
 * before going upstream by the image rules, and completed and billed even when the client
 * leaves (rule 7).
 */

export const IMAGES_GENERATIONS_ROUTE: NativeRoute = {
  name: 'images_a',
  upstreamPath: '/v1/images/generations',
  upstreamBody: (call) => replaceModel(call),
  meter: () => new ImagesMeter(),
  refusal: (call) => imageRefusal(call, 'a'),
  outlivesClient: true,
};

/** A form goes upstream as the client's bytes with the `model` part's value replaced; files untouched. */
export const IMAGES_EDITS_ROUTE: NativeRoute = {
  name: 'images_a_edits',
  upstreamPath: '/v1/images/edits',
  upstreamBody: (call) => (call.form ? upstreamBodyOf(replacePart(call.body, modelPart(call), call.model.upstreamModel), call.spool) : replaceModel(call)),
  meter: () => new ImagesMeter(),
  refusal: (call) => imageRefusal(call, 'a'),
  outlivesClient: true,
};

export const VENDOR_B_IMAGES_ROUTE: NativeRoute = {
  name: 'images_b',
  upstreamPath: '/api/v3/images/generations',
  upstreamBody: (call) => replaceModel(call),
  meter: () => new VendorBImagesMeter(),
  refusal: (call) => imageRefusal(call, 'b'),
  outlivesClient: true,
};

/** The model is in the path, so the body goes upstream unchanged. */
export const GENERATE_CONTENT_ROUTE: NativeRoute = {
  name: 'images_c',
  upstreamPath: (call) => `/v1beta/models/${call.model.upstreamModel.split('/').map(encodeURIComponent).join('/')}:generateContent`,
  upstreamBody: (call) => (call.spool ? upstreamBodyOf([call.body], call.spool) : call.body),
  meter: () => new GenerateContentMeter(),
  refusal: (call) => imageRefusal(call, 'c'),
  outlivesClient: true,
};

const GENERATE_CONTENT = 'generateContent';

/**
 * The model id of `/v1beta/models/{model}:{method}`; only generateContent is served (SPEC.md
 * "Images" rule 3), so `streamGenerateContent`, `countTokens` and the rest give 400.
 */
export function generateContentModel(params: Record<string, string | undefined>): string {
  const target = params.target ?? '';
  const colon = target.lastIndexOf(':');
  const method = colon === -1 ? undefined : target.slice(colon + 1);
  if (method !== GENERATE_CONTENT) {
    const named = method === undefined ? 'no method' : `"${method}"`;
    throw new GatewayError('invalid_request', `Only ${GENERATE_CONTENT} is supported on /v1beta/models/{model}:{method}; the path names ${named}.`);
  }
  const model = target.slice(0, colon);
  if (!model) throw new GatewayError('invalid_request', `The path /v1beta/models/{model}:${GENERATE_CONTENT} names no model.`);
  return model;
}

function modelPart(call: AdmittedCall) {
  const part = call.form!.find((candidate) => candidate.name === 'model');
  if (!part) throw new Error('admitted form without a model part');
  return part;
}
