import { crc32, deflateSync } from 'node:zlib';

/**
 * What the three synchronous image formats share: the one tiny valid PNG every image answer holds
 * (whatever format was asked for), the host format B's image addresses name, the prompt text token
 * rule, the refusal type and the data URL reader. The formats themselves: A (OpenAI Images) in
 * images-a-routes.ts, B (Volcengine Ark Seedream) in images-b-route.ts, C (Gemini generateContent)
 * in generate-content-route.ts.
 */

/** A 1x1 RGBA PNG built here (signature, IHDR, IDAT, IEND with their CRCs): every image answered. */
export const SIMULATED_PNG: Buffer = encodePng(0x2a, 0x9d, 0x8f, 0xff);
export const SIMULATED_PNG_BASE64 = SIMULATED_PNG.toString('base64');

/** Where format B says its images are when asked for URLs; never fetched. */
export const IMAGE_HOST = 'https://images.simulator.invalid';

/** Prompt text counts a quarter of its UTF-8 bytes, rounded up (the embeddings rule). */
export function textTokens(text: string): number {
  return Math.ceil(Buffer.byteLength(text, 'utf8') / 4);
}

/** A request the vendor refuses: message and the parameter named in `error.param`. */
export interface Invalid {
  invalid: string;
  param?: string;
}

/** `data:<type>;base64,<payload>`: looks at the head only, so a 30 MiB address costs no copy. */
export function dataUrl(url: string): { type: string; offset: number; byteLength: number } | undefined {
  const head = /^data:([\w.+-]+\/[\w.+-]+);base64,/.exec(url.slice(0, 128));
  if (!head) return undefined;
  const offset = head[0].length;
  const length = url.length - offset;
  const padding = url.endsWith('==') ? 2 : url.endsWith('=') ? 1 : 0;
  return { type: head[1], offset, byteLength: Math.floor((length * 3) / 4) - padding };
}

// ---------------------------------------------------------------- PNG

function encodePng(red: number, green: number, blue: number, alpha: number): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const typed = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(typed));
    return Buffer.concat([length, typed, crc]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(1, 0); // width
  header.writeUInt32BE(1, 4); // height
  header.set([8, 6, 0, 0, 0], 8); // 8 bits per channel, RGBA, deflate, no filter method, no interlace
  const scanline = Buffer.from([0, red, green, blue, alpha]); // filter byte "None", one pixel
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return Buffer.concat([signature, chunk('IHDR', header), chunk('IDAT', deflateSync(scanline)), chunk('IEND', Buffer.alloc(0))]);
}
