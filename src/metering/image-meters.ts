import { scanTopLevel } from '../request-body/json-scan';
import { readValue } from '../request-body/json-splice';
import { NO_WORDS, ResponseMeter } from './response-meter';
import type { PriceBasis } from './pricing';
import { generateContentUsageFigures, imagesUsageFigures, UsageFigures, vendorBImagesUsageFigures } from './usage-figures';

/**
 * Meters of the image answers. Answers carry base64 images of several MiB, so only the
 * top-level members the bill needs are decoded; images are never streamed (the gateway refuses
 * `stream`), so no event is ever read.
 */

/** The named top-level members of a JSON answer, decoded; the rest (base64 images) stays bytes. */
function topLevelMembers(body: Buffer, ...keys: string[]): Record<string, unknown> {
  const members: Record<string, unknown> = {};
  const scan = scanTopLevel(body);
  if (!scan.ok) return members;
  for (const key of keys) {
    const field = scan.fields.get(key);
    if (field) members[key] = readValue(body, field);
  }
  return members;
}

abstract class ImageMeter implements ResponseMeter {
  readonly eventWords = NO_WORDS;
  protected usage: UsageFigures | undefined;

  abstract readJson(body: Buffer): void;

  readEvent(): boolean {
    return true;
  }

  figures(): UsageFigures | undefined {
    return this.usage;
  }
}

/** Format A: `usage` token figures by text and image. */
export class ImagesMeter extends ImageMeter {
  readJson(body: Buffer): void {
    this.usage = imagesUsageFigures(topLevelMembers(body, 'usage').usage);
  }
}

/** Format C: `usageMetadata`. */
export class GenerateContentMeter extends ImageMeter {
  readJson(body: Buffer): void {
    this.usage = generateContentUsageFigures(topLevelMembers(body, 'usageMetadata').usageMetadata);
  }
}

/**
 * Format B: output and input image counts (`usage.generated_images`, `usage.input_images`).
 * Each output image is priced by its own pixels (`data[].size`, `price_tiers[].max_output_pixels`).
 */
export class VendorBImagesMeter extends ImageMeter {
  /** Pixels of each returned image, in answer order; undefined where the size is unreadable. */
  private pixels: Array<number | undefined> = [];

  readJson(body: Buffer): void {
    const { usage, data } = topLevelMembers(body, 'usage', 'data');
    const images = Array.isArray(data) ? data.filter(isImage) : undefined;
    this.pixels = (images ?? []).map((image) => pixelsOf((image as Record<string, unknown>).size));
    this.usage = vendorBImagesUsageFigures(usage, images?.length);
  }

  /** Each returned image's pixels, which price it by its tier (pricing.ts `recordCostOf`). */
  priceBasis(): PriceBasis | undefined {
    return this.usage && this.pixels.length > 0 ? { output_pixels: this.pixels.map((pixels) => pixels ?? null) } : undefined;
  }
}

/** An item of `data` that holds an image (failed items of a batch carry an `error` instead). */
function isImage(item: unknown): boolean {
  if (!item || typeof item !== 'object') return false;
  const record = item as Record<string, unknown>;
  return typeof record.url === 'string' || typeof record.b64_json === 'string';
}

/** `"2048x2048"` → 4194304. */
export function pixelsOf(size: unknown): number | undefined {
  if (typeof size !== 'string') return undefined;
  const match = /^\s*(\d{1,6})\s*[x×*]\s*(\d{1,6})\s*$/i.exec(size);
  return match ? Number(match[1]) * Number(match[2]) : undefined;
}
