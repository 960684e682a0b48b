import type { UsageFigures } from '../metering/usage-figures';
import type { VideoInterface } from './video-task.entity';

/** SPEC.md Limits: a submit without `duration` reserves for 30 seconds. */
export const DEFAULT_DURATION_SECONDS = 30;
/** SPEC.md Limits: drafts (vendor-b) are reserved at 480p. */
export const DRAFT_RESOLUTION = '480p';

/** Frame height assumed when a submit names no resolution. */
const DEFAULT_HEIGHT = 720;
/** Frame height assumed for a resolution the gateway cannot read: the larger guess reserves safely. */
const UNKNOWN_HEIGHT = 1080;
const NAMED_HEIGHTS: Record<string, number> = { '2k': 1440, '4k': 2160 };
/** Vendor-b counts a video's tokens as width × height × frames / 1024. */
const FRAMES_PER_SECOND = 24;
const PIXELS_PER_TOKEN = 1024;

/** What an estimate is made from: the task as submitted, or as the upstream last reported it. */
export interface EstimateBasis {
  durationSeconds?: number | null;
  resolution?: string | null;
  draft: boolean;
  videoInput: boolean;
  inputImageCount: number;
}

/** The resolution a task is priced at: drafts at 480p, others as requested (undefined: none named). */
export function pricedResolution(basis: Pick<EstimateBasis, 'draft' | 'resolution'>): string | undefined {
  return basis.draft ? DRAFT_RESOLUTION : (basis.resolution ?? undefined);
}

function frameHeight(resolution: string | undefined): number {
  if (resolution === undefined) return DEFAULT_HEIGHT;
  const name = resolution.trim().toLowerCase();
  const digits = /^(\d{3,4})p$/.exec(name);
  return digits ? Number(digits[1]) : (NAMED_HEIGHTS[name] ?? UNKNOWN_HEIGHT);
}

/**
 * The figures a task is expected to be metered by, from its duration (30 s when absent) and
 * resolution: what is reserved at submit, and what is charged when a finished task reports no
 * usage. Vendor-c: output seconds, input images, and input video seconds taken as long as the
 * output (its length is not known before the upstream has it). Vendor-b: output tokens of a
 * 16:9 video at 24 frames per second.
 */
export function estimatedFigures(videoInterface: VideoInterface, basis: EstimateBasis): UsageFigures {
  const seconds = basis.durationSeconds ?? DEFAULT_DURATION_SECONDS;
  if (videoInterface === 'video_c') {
    return { output_seconds: seconds, input_seconds: basis.videoInput ? seconds : 0, input_image_count: basis.inputImageCount };
  }
  const height = frameHeight(pricedResolution(basis));
  const width = Math.round((height * 16) / 9);
  return { output_video_tokens: Math.round((width * height * FRAMES_PER_SECOND * seconds) / PIXELS_PER_TOKEN) };
}
