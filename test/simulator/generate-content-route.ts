import { type Invalid, SIMULATED_PNG_BASE64, textTokens } from './image-common';
import { asRecord, newId } from './scripted-model';
import type { Refusal, Route } from './simulator-types';
import { googleError } from './vendor-errors';

/**
 * Image format C (Gemini generateContent): `POST /v1beta/models/{model}:generateContent`;
 * `x-goog-api-key`; Google error shape. Every figure is a pure function of the request (formulas
 * exported below); images are the one tiny valid PNG of image-common.ts.
 * @see https://ai.google.dev/api/generate-content
 */

/** Gemini's published figures: an input image (up to 384 px a side) and an output image (gemini-2.5-flash-image). */
export const GEMINI_INPUT_IMAGE_TOKENS = 258;
export const GEMINI_OUTPUT_IMAGE_TOKENS = 1290;
/** Thinking tokens when `thinkingConfig` asks for thinking; a positive `thinkingBudget` below it caps it. */
export const GEMINI_THOUGHT_TOKENS = 128;
/** What an image model answers with when the request names no `responseModalities` (or an empty list). */
export const DEFAULT_MODALITIES = ['TEXT', 'IMAGE'];

const GENERATE_CONTENT_PATH = /^\/v1beta\/models\/([^/:]+):([A-Za-z]+)$/;

/** The route for `/v1beta/models/{model}:{method}`: generateContent for any model name, else a 404. */
export function generateContentRoute(method: string, pathname: string): Route | undefined {
  const match = GENERATE_CONTENT_PATH.exec(pathname);
  if (!match) return undefined;
  if (method === 'POST' && match[2] === 'generateContent') return generateContent(decodeSegment(match[1]));
  return googleRoute((context) => context.json(404, googleError(404, `Method ${method} ${pathname} is not served by the simulator.`)));
}

/** The reply's text part: fixed words and the start of the last user text. */
export function geminiReplyText(prompt: string): string {
  return `Here is the image you asked for: ${Array.from(prompt).slice(0, 60).join('')}`;
}

/** Thinking tokens reported for a `thinkingConfig` (undefined: not configured, so none). */
export function geminiThoughtTokens(thinkingConfig: unknown): number {
  if (thinkingConfig === undefined) return 0;
  const budget = asRecord(thinkingConfig).thinkingBudget;
  if (budget === 0) return 0;
  return typeof budget === 'number' && budget > 0 ? Math.min(budget, GEMINI_THOUGHT_TOKENS) : GEMINI_THOUGHT_TOKENS;
}

function googleRoute(handle: Route['handle']): Route {
  return {
    vendor: 'openai',
    credential: 'x-goog-api-key',
    checksOwnBody: true,
    errorBody: (status, message) => googleError(status, message),
    unauthorized: refuseGoogleKey,
    handle,
  };
}

/** Google answers a wrong key with 400 INVALID_ARGUMENT (reason API_KEY_INVALID) and a missing one with 403. */
function refuseGoogleKey(presented: boolean): Refusal {
  if (!presented) {
    const message =
      "Method doesn't allow unregistered callers (callers without established identity). " +
      'Please use API Key or other form of API consumer identity to call this API.';
    return { status: 403, body: googleError(403, message) };
  }
  const reason = {
    '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
    reason: 'API_KEY_INVALID',
    domain: 'googleapis.com',
    metadata: { service: 'generativelanguage.googleapis.com' },
  };
  return { status: 400, body: googleError(400, 'API key not valid. Please pass a valid API key.', [reason]) };
}

/** What the request holds: input tokens per modality and the last user text. */
interface GeminiPrompt {
  tokens: Record<string, number>;
  lastText: string;
}

function generateContent(model: string): Route {
  return googleRoute(async (context) => {
    const json = context.request.json;
    const invalid = (message: string) => context.json(400, googleError(400, message));
    if (json === null || typeof json !== 'object' || Array.isArray(json)) return invalid('Invalid JSON payload received. Expected an object.');
    const body = json as Record<string, unknown>;
    const prompt = readPrompt(body);
    if ('invalid' in prompt) return invalid(prompt.invalid);
    const config = asRecord(body.generationConfig);
    const asked = config.responseModalities;
    if (asked !== undefined && (!Array.isArray(asked) || asked.some((value) => !['TEXT', 'IMAGE', 'AUDIO'].includes(value as string)))) {
      return invalid(`Invalid value at 'generation_config.response_modalities': ${JSON.stringify(asked)}`);
    }
    const modalities = Array.isArray(asked) && asked.length > 0 ? (asked as string[]) : DEFAULT_MODALITIES;
    if (modalities.includes('AUDIO')) return invalid('Model does not support the requested response modalities: audio');
    const thinking = asRecord(config.thinkingConfig);
    const thoughts = geminiThoughtTokens(config.thinkingConfig);
    const text = geminiReplyText(prompt.lastText);
    const output: Record<string, number> = {};
    const parts: unknown[] = [];
    if (thoughts > 0 && thinking.includeThoughts === true) parts.push({ text: 'Planning the composition before drawing it.', thought: true });
    if (modalities.includes('TEXT')) {
      parts.push({ text });
      output.TEXT = textTokens(text);
    }
    if (modalities.includes('IMAGE')) {
      parts.push({ inlineData: { mimeType: 'image/png', data: SIMULATED_PNG_BASE64 } });
      output.IMAGE = GEMINI_OUTPUT_IMAGE_TOKENS;
    }
    const promptCount = sum(prompt.tokens);
    const candidatesCount = sum(output);
    return context.json(200, {
      candidates: [{ content: { parts, role: 'model' }, finishReason: 'STOP', index: 0 }],
      usageMetadata: {
        promptTokenCount: promptCount,
        candidatesTokenCount: candidatesCount,
        totalTokenCount: promptCount + candidatesCount + thoughts,
        ...(thoughts > 0 ? { thoughtsTokenCount: thoughts } : {}),
        promptTokensDetails: details(prompt.tokens),
        candidatesTokensDetails: details(output),
      },
      modelVersion: model,
      responseId: newId('', 22),
    });
  });
}

/**
 * Text parts count textTokens (system instruction included); every inline or file part counts
 * GEMINI_INPUT_IMAGE_TOKENS under its modality (IMAGE, AUDIO, VIDEO or DOCUMENT).
 */
function readPrompt(body: Record<string, unknown>): GeminiPrompt | Invalid {
  const contents = body.contents;
  if (!Array.isArray(contents) || contents.length === 0) return { invalid: '* GenerateContentRequest.contents: contents is not specified' };
  const tokens: Record<string, number> = { TEXT: 0 };
  const add = (modality: string, count: number) => (tokens[modality] = (tokens[modality] ?? 0) + count);
  for (const part of partsOf(body.systemInstruction)) if (typeof part.text === 'string') add('TEXT', textTokens(part.text));
  let lastText = '';
  for (const [index, content] of contents.entries()) {
    const parts = partsOf(content);
    if (parts.length === 0) return { invalid: `* GenerateContentRequest.contents[${index}].parts: contents.parts must not be empty.` };
    const texts: string[] = [];
    for (const part of parts) {
      const media = asRecord(part.inlineData ?? part.fileData);
      if (typeof part.text === 'string') {
        add('TEXT', textTokens(part.text));
        if (part.thought !== true) texts.push(part.text);
      } else if (part.inlineData !== undefined || part.fileData !== undefined) {
        if (typeof media.mimeType !== 'string') return { invalid: `* GenerateContentRequest.contents[${index}].parts: mime_type is required.` };
        add(modalityOf(media.mimeType), GEMINI_INPUT_IMAGE_TOKENS);
      }
    }
    if (asRecord(content).role !== 'model' && texts.length > 0) lastText = texts.join(' ');
  }
  return { tokens, lastText };
}

function partsOf(content: unknown): Record<string, unknown>[] {
  const parts = asRecord(content).parts;
  return Array.isArray(parts) ? parts.map(asRecord) : [];
}

function modalityOf(mimeType: string): string {
  const kind = mimeType.split('/')[0];
  return kind === 'image' || kind === 'audio' || kind === 'video' ? kind.toUpperCase() : 'DOCUMENT';
}

function details(tokens: Record<string, number>): Array<{ modality: string; tokenCount: number }> {
  return Object.entries(tokens)
    .filter(([modality, count]) => count > 0 || modality === 'TEXT')
    .map(([modality, tokenCount]) => ({ modality, tokenCount }));
}

const sum = (tokens: Record<string, number>) => Object.values(tokens).reduce((total, count) => total + count, 0);

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
