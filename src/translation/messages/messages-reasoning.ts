import type { CanonicalPart, ReasoningOrigin } from '../canonical/request';
import type { CanonicalOutputPart } from '../canonical/response';
import { openReasoning, sealReasoning } from '../canonical/reasoning-seal';

/**
 * Reasoning continuation for messages (docs/translation.md "Reasoning"): answers seal the
 * upstream's opaque reasoning into the thinking `signature` (or redacted `data`); requests open
 * it again; a messages upstream gets its own blocks back only when the seal names it.
 */

type ReasoningPart = Extract<CanonicalPart, { type: 'reasoning' }>;
type ReasoningOutputPart = Extract<CanonicalOutputPart, { type: 'reasoning' }>;
type Opaque = NonNullable<ReasoningPart['opaque']>;

export const MESSAGES_PROTOCOL = 'messages';

/** A client's `thinking` block: a gateway seal restores its origin, a vendor signature has none. */
export function decodeThinkingBlock(thinking: string, signature: string): ReasoningPart {
  const sealed = signature === '' ? undefined : openReasoning(signature);
  if (sealed) {
    // The sealed text is what the upstream produced; a messages upstream checks it verbatim.
    return withOpaque({ type: 'reasoning', text: sealed.text ?? thinking, origin: sealed.origin }, sealed);
  }
  const part: ReasoningPart = { type: 'reasoning', text: thinking };
  return signature === '' ? part : { ...part, opaque: { kind: 'signature', value: signature } };
}

/** A client's `redacted_thinking` block: its `data` may be a seal too. */
export function decodeRedactedThinkingBlock(data: string): ReasoningPart {
  const sealed = openReasoning(data);
  if (sealed) return withOpaque({ type: 'reasoning', text: sealed.text ?? '', origin: sealed.origin }, sealed);
  return { type: 'reasoning', text: '', opaque: { kind: 'redacted', value: data } };
}

function withOpaque(part: ReasoningPart, opaque: Opaque): ReasoningPart {
  const { kind, value, itemId } = opaque;
  return { ...part, opaque: itemId === undefined ? { kind, value } : { kind, value, itemId } };
}

/**
 * The thinking block a messages upstream needs back, or undefined when the part is not its
 * own: other protocols' data, unsealed vendor data, or another model's reasoning would be
 * refused (or, worse, misread) by the upstream.
 */
export function restoreReasoningBlock(part: ReasoningPart, upstreamModel: string): Record<string, unknown> | undefined {
  const { origin, opaque } = part;
  if (!origin || !opaque || origin.protocol !== MESSAGES_PROTOCOL || origin.upstreamModel !== upstreamModel) return undefined;
  switch (opaque.kind) {
    case 'signature':
      return { type: 'thinking', thinking: part.text, signature: opaque.value };
    case 'redacted':
      return { type: 'redacted_thinking', data: opaque.value };
    // Encrypted content is a responses upstream's form; a messages origin never carries it.
    case 'encrypted':
      return undefined;
    default: {
      const unreachable: never = opaque.kind;
      throw new Error(`Unhandled reasoning kind: ${String(unreachable)}`);
    }
  }
}

/** Visible reasoning of an answer part: its text, else its summaries. */
export function visibleReasoning(part: ReasoningOutputPart): string {
  if (part.text !== '' || !part.summary) return part.text;
  return part.summary.join('\n\n');
}

/**
 * The client-facing signature: a seal of the upstream's opaque data, its origin and the visible
 * text. Without opaque data or origin there is nothing to continue, and the signature is empty
 * (a request carrying it back gives a reasoning part that no upstream restores).
 */
export function sealedSignature(opaque: ReasoningPart['opaque'], origin: ReasoningOrigin | undefined, text: string): string {
  if (!opaque || !origin) return '';
  return sealReasoning({ origin, kind: opaque.kind, value: opaque.value, text, itemId: opaque.itemId });
}

/** The answer block for a reasoning part: redacted data stays redacted, everything else is thinking. */
export function encodeReasoningBlock(part: ReasoningOutputPart): Record<string, unknown> {
  const text = visibleReasoning(part);
  const signature = sealedSignature(part.opaque, part.origin, text);
  if (part.opaque?.kind === 'redacted' && signature !== '') return { type: 'redacted_thinking', data: signature };
  return { type: 'thinking', thinking: text, signature };
}
