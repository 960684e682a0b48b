import { GoogleGenAI } from '@google/genai';
import { GEMINI_INPUT_IMAGE_TOKENS, GEMINI_OUTPUT_IMAGE_TOKENS, GEMINI_THOUGHT_TOKENS, geminiReplyText } from './generate-content-route';
import { SIMULATED_PNG_BASE64, textTokens } from './image-common';
import { useSimulator } from './simulator-test-kit';

const KEY = 'sk-images';
const GEMINI_PATH = (model: string) => `/v1beta/models/${model}:generateContent`;

describe('UpstreamSimulator images', () => {
  const upstream = useSimulator(KEY);
  const { simulator, post } = upstream;

  describe('format C (generateContent)', () => {
    let ai: GoogleGenAI;

    beforeAll(() => {
      ai = new GoogleGenAI({ apiKey: KEY, httpOptions: { baseUrl: upstream.baseUrl } });
    });
    // The SDK warns on every `text` read of an answer that also holds an image.
    beforeEach(() => jest.spyOn(console, 'warn').mockImplementation(() => undefined));
    afterEach(() => jest.restoreAllMocks());

    it('answers text and an image for TEXT and IMAGE, with usage per modality', async () => {
      const prompt = 'a lighthouse at dusk';
      const config = { responseModalities: ['TEXT', 'IMAGE'] };
      const response = await ai.models.generateContent({ model: 'image-model-x.1', contents: prompt, config });

      const reply = geminiReplyText(prompt);
      expect(response.text).toBe(reply);
      expect(response.candidates?.[0]).toMatchObject({ finishReason: 'STOP', index: 0, content: { role: 'model' } });
      expect(response.candidates?.[0].content?.parts?.[1]).toEqual({ inlineData: { mimeType: 'image/png', data: SIMULATED_PNG_BASE64 } });
      expect(response.data).toBe(SIMULATED_PNG_BASE64);
      const [input, output] = [textTokens(prompt), textTokens(reply)];
      expect(response.usageMetadata).toEqual({
        promptTokenCount: input,
        candidatesTokenCount: output + GEMINI_OUTPUT_IMAGE_TOKENS,
        totalTokenCount: input + output + GEMINI_OUTPUT_IMAGE_TOKENS,
        promptTokensDetails: [{ modality: 'TEXT', tokenCount: input }],
        candidatesTokensDetails: [
          { modality: 'TEXT', tokenCount: output },
          { modality: 'IMAGE', tokenCount: GEMINI_OUTPUT_IMAGE_TOKENS },
        ],
      });
      expect(response.modelVersion).toBe('image-model-x.1');
      expect(response.responseId).toMatch(/^\w{22}$/);
      const [recorded] = simulator.requests;
      expect(recorded.path).toBe(GEMINI_PATH('image-model-x.1'));
      expect(recorded.headers['x-goog-api-key']).toBe(KEY);
      expect(recorded.json).toMatchObject({ generationConfig: { responseModalities: ['TEXT', 'IMAGE'] } });
    });

    it('answers only an image for IMAGE, only text for TEXT, and both when no modality is named', async () => {
      const parts = async (responseModalities?: string[]) =>
        (await ai.models.generateContent({ model: 'm', contents: 'x', config: { responseModalities } })).candidates?.[0].content?.parts;

      expect(await parts(['IMAGE'])).toEqual([{ inlineData: { mimeType: 'image/png', data: SIMULATED_PNG_BASE64 } }]);
      expect(await parts(['TEXT'])).toEqual([{ text: geminiReplyText('x') }]);
      expect((await parts())?.map((part) => Object.keys(part))).toEqual([['text'], ['inlineData']]);
      expect(simulator.requests[2].json).not.toHaveProperty('generationConfig.responseModalities');
    });

    it('counts input images and system text, and reports thinking when it is configured', async () => {
      const response = await ai.models.generateContent({
        model: 'm',
        contents: [
          { role: 'user', parts: [{ text: 'draw a boat' }] },
          { role: 'model', parts: [{ inlineData: { mimeType: 'image/png', data: SIMULATED_PNG_BASE64 } }] },
          { role: 'user', parts: [{ text: 'now make it blue' }, { inlineData: { mimeType: 'image/jpeg', data: 'AAAA' } }] },
        ],
        config: { systemInstruction: 'be brief', responseModalities: ['IMAGE'], thinkingConfig: { thinkingBudget: 64, includeThoughts: true } },
      });

      const text = textTokens('be brief') + textTokens('draw a boat') + textTokens('now make it blue');
      const images = 2 * GEMINI_INPUT_IMAGE_TOKENS;
      expect(response.usageMetadata).toEqual({
        promptTokenCount: text + images,
        candidatesTokenCount: GEMINI_OUTPUT_IMAGE_TOKENS,
        thoughtsTokenCount: 64,
        totalTokenCount: text + images + GEMINI_OUTPUT_IMAGE_TOKENS + 64,
        promptTokensDetails: [
          { modality: 'TEXT', tokenCount: text },
          { modality: 'IMAGE', tokenCount: images },
        ],
        candidatesTokensDetails: [{ modality: 'IMAGE', tokenCount: GEMINI_OUTPUT_IMAGE_TOKENS }],
      });
      expect(response.candidates?.[0].content?.parts?.[0]).toMatchObject({ thought: true });
      expect(response.text).toBeUndefined();
    });

    it('reports the default thinking figure without a budget, and none with budget 0', async () => {
      const thoughts = async (thinkingConfig: Record<string, unknown>) =>
        (await ai.models.generateContent({ model: 'm', contents: 'x', config: { thinkingConfig } })).usageMetadata?.thoughtsTokenCount;

      expect(await thoughts({ includeThoughts: false })).toBe(GEMINI_THOUGHT_TOKENS);
      expect(await thoughts({ thinkingBudget: 0 })).toBeUndefined();
      expect(await thoughts({ thinkingBudget: 10_000 })).toBe(GEMINI_THOUGHT_TOKENS);
    });

    it('serves any model name, an encoded one decoded', async () => {
      const answer = await post(GEMINI_PATH('vendor%2Fimage.v2-preview'), { contents: [{ parts: [{ text: 'x' }] }] }, { 'x-goog-api-key': KEY });

      expect(answer.status).toBe(200);
      expect(answer.json.modelVersion).toBe('vendor/image.v2-preview');
    });

    it.each(['streamGenerateContent', 'countTokens', 'predict'])("answers :%s with 404 in Google's shape", async (method) => {
      const answer = await post(`/v1beta/models/m:${method}`, { contents: [{ parts: [{ text: 'x' }] }] }, { 'x-goog-api-key': KEY });

      expect(answer.status).toBe(404);
      expect(answer.json).toEqual({ error: { code: 404, message: expect.stringContaining(method), status: 'NOT_FOUND' } });
    });

    it.each([
      ['no contents', {}, 'contents is not specified'],
      ['a content without parts', { contents: [{ role: 'user', parts: [] }] }, 'contents[0].parts'],
      ['an unknown modality', { contents: [{ parts: [{ text: 'x' }] }], generationConfig: { responseModalities: ['SMELL'] } }, 'modalities'],
      ['audio output', { contents: [{ parts: [{ text: 'x' }] }], generationConfig: { responseModalities: ['AUDIO'] } }, 'audio'],
      ['a body that is not an object', [1, 2], 'Invalid JSON payload'],
    ])('answers %s with 400 INVALID_ARGUMENT', async (_case, body, message) => {
      const answer = await post(GEMINI_PATH('m'), body, { 'x-goog-api-key': KEY });

      expect(answer.status).toBe(400);
      expect(answer.json).toEqual({ error: { code: 400, message: expect.stringContaining(message), status: 'INVALID_ARGUMENT' } });
    });

    it('refuses a wrong key with 400 API_KEY_INVALID and a missing one with 403, as Google does', async () => {
      const wrong = await post(GEMINI_PATH('m'), { contents: [{ parts: [{ text: 'x' }] }] }, { 'x-goog-api-key': 'wrong' });
      const bearer = await post(GEMINI_PATH('m'), { contents: [{ parts: [{ text: 'x' }] }] }, { authorization: `Bearer ${KEY}` });
      const wrongSdk = new GoogleGenAI({ apiKey: 'wrong', httpOptions: { baseUrl: upstream.baseUrl } });
      const viaSdk = wrongSdk.models.generateContent({ model: 'm', contents: 'x' });

      expect(wrong).toMatchObject({
        status: 400,
        json: { error: { code: 400, status: 'INVALID_ARGUMENT', details: [{ reason: 'API_KEY_INVALID' }] } },
      });
      expect(bearer).toMatchObject({ status: 403, json: { error: { code: 403, status: 'PERMISSION_DENIED' } } });
      await expect(viaSdk).rejects.toMatchObject({ status: 400 });
    });

    it("answers planned failures in Google's shape", async () => {
      simulator.failNext(GEMINI_PATH('m'), { status: 429 });

      const answer = await post(GEMINI_PATH('m'), { contents: [{ parts: [{ text: 'x' }] }] }, { 'x-goog-api-key': KEY });

      expect(answer).toMatchObject({ status: 429, json: { error: { code: 429, status: 'RESOURCE_EXHAUSTED' } } });
    });
  });
});
