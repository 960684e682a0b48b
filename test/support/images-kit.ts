import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';

/** Keys of the image and speech suites: a wide key, a narrow scope, a used-up budget. */
export const IMAGE_KEYS = {
  all: 'gk-images-all-0001',
  textOnly: 'gk-images-text-only-0001',
  poor: 'gk-images-poor-0001',
} as const;

export const IMAGE_PATHS = {
  generations: '/v1/images/generations',
  edits: '/v1/images/edits',
  vendorB: '/vendor-b/api/v3/images/generations',
  generateContent: (model: string, method = 'generateContent') => `/v1beta/models/${model}:${method}`,
  speech: '/vendor-c/v1/t2a_v2',
};

/**
 * Models of the image and speech suites, one per interface (prices in currency units):
 * format A per 1M tokens of each kind; format B per image with pixel tiers (up to 1 MP 0.02,
 * up to 4 MP 0.03, above 0.04) and 0.002 per input image; format C per 1M tokens; speech per
 * 1M characters. `text-model` offers chat only, for wrong-endpoint checks.
 */
export function imagesConfigYaml(simulator: string): string {
  return `
upstreams:
  - id: line-a
    base_url: ${simulator}
    api_key: \${TEST_VENDOR_KEY}
models:
  - id: image-a
    upstream_model: vendor-image-a-1
    interfaces: [images_a]
    lines: [line-a]
    prices: { input_text_tokens: 5, input_image_tokens: 10, output_text_tokens: 10, output_image_tokens: 40 }
  - id: image-b
    upstream_model: vendor-image-b-4
    interfaces: [images_b]
    lines: [line-a]
    prices: { output_images: 0.04, input_images: 0.002 }
    price_tiers:
      - max_output_pixels: 1048576
        prices: { output_images: 0.02 }
      - max_output_pixels: 4194304
        prices: { output_images: 0.03 }
  - id: image-c
    upstream_model: vendor-image-c-flash
    interfaces: [images_c]
    lines: [line-a]
    prices: { input_tokens: 0.3, output_text_tokens: 2.5, thinking_tokens: 2.5, output_image_tokens: 30 }
  - id: speech
    upstream_model: vendor-speech-02-hd
    interfaces: [speech_c]
    lines: [line-a]
    prices: { input_characters: 100 }
  - id: text-model
    upstream_model: vendor-chat-1
    interfaces: [chat_completions]
    lines: [line-a]
owners:
  - id: team-a
    kind: project
    budget: 100
  - id: team-poor
    kind: project
    budget: 0.000001
keys:
  - key: ${IMAGE_KEYS.all}
    owner: team-a
    models: ["*"]
  - key: ${IMAGE_KEYS.textOnly}
    owner: team-a
    models: [text-model]
  - key: ${IMAGE_KEYS.poor}
    owner: team-poor
    models: ["*"]
`;
}

export interface RawAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

/** One raw request: the exact bytes given, the exact status and text received. */
export function rawRequest(url: string, options: { method?: string; headers?: Record<string, string>; body?: Buffer | string }): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, { method: options.method ?? 'POST', headers: options.headers, agent: false }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, text: Buffer.concat(chunks).toString('utf8') }));
      response.on('error', reject);
    });
    request.on('error', reject);
    request.end(options.body);
  });
}

/** A `multipart/form-data` body from text fields and files, with its content type. */
export function formBody(
  fields: Array<[string, string] | [string, { filename: string; type: string; bytes: Buffer }]>,
  boundary = '----gateway-test-boundary-7MA4YWxkTrZu0gW',
): { body: Buffer; contentType: string } {
  const pieces: Buffer[] = [];
  for (const [name, value] of fields) {
    if (typeof value === 'string') {
      pieces.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`));
    } else {
      pieces.push(
        Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"; filename="${value.filename}"\r\nContent-Type: ${value.type}\r\n\r\n`),
        value.bytes,
        Buffer.from('\r\n'),
      );
    }
  }
  pieces.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(pieces), contentType: `multipart/form-data; boundary=${boundary}` };
}
