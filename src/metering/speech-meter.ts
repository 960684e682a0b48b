import { eventData, field, mentions, parseJson, ResponseMeter } from './response-meter';
import { speechUsageFigures, UsageFigures } from './usage-figures';

/** What an event must name to be read: the status or the billed figures. */
const SPEECH_WORDS = /"(?:base_resp|extra_info)"/;

/**
 * Speech (vendor-c t2a_v2) is billed by `extra_info.usage_characters`, which comes in the JSON
 * answer or in the final event of a stream. Errors may arrive with HTTP 200: a `base_resp`
 * whose `status_code` is not 0 makes the call unbilled, whatever else it carries.
 */
export class SpeechMeter implements ResponseMeter {
  readonly eventWords = SPEECH_WORDS;
  private usage: UsageFigures | undefined;
  private upstreamError: string | null = null;

  readJson(body: Buffer): void {
    this.read(parseJson(body.toString('utf8')));
  }

  readEvent(raw: Buffer): boolean {
    if (mentions(raw, SPEECH_WORDS)) this.read(eventData(raw));
    return true;
  }

  figures(): UsageFigures | undefined {
    return this.upstreamError ? undefined : this.usage;
  }

  errorCode(): string | null {
    return this.upstreamError;
  }

  private read(answer: unknown): void {
    const status = field(field(answer, 'base_resp'), 'status_code');
    if (typeof status === 'number' && status !== 0) this.upstreamError ??= `upstream_status_code_${status}`;
    this.usage = speechUsageFigures(field(answer, 'extra_info')) ?? this.usage;
  }
}
