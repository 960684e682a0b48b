import type { ReasoningOrigin } from './request';

/**
 * Reasoning continuation across protocols. When an answer is translated, the upstream's
 * opaque reasoning data (a messages `signature`, a responses `encrypted_content`) is sealed,
 * together with where it came from and the visible text, into the one opaque field the
 * client protocol has (responses `encrypted_content`, messages thinking `signature`). The
 * client returns it unchanged; the next translated request opens it and restores the
 * upstream's own form, but only on the same upstream protocol and model.
 *
 * The seal is an encoding, not encryption: it holds nothing the client did not already get.
 */
export interface SealedReasoning {
  origin: ReasoningOrigin;
  kind: 'signature' | 'encrypted' | 'redacted';
  value: string;
  /** The visible reasoning text the upstream gave with it (messages needs it back verbatim). */
  text?: string;
  /** Upstream reasoning item id (responses). */
  itemId?: string;
}

const PREFIX = 'gwr1.';

export function sealReasoning(sealed: SealedReasoning): string {
  const payload = {
    p: sealed.origin.protocol,
    m: sealed.origin.upstreamModel,
    k: sealed.kind,
    v: sealed.value,
    t: sealed.text,
    i: sealed.itemId,
  };
  return PREFIX + Buffer.from(JSON.stringify(payload), 'utf8').toString('base64url');
}

/** The sealed record, or undefined when `token` is not a seal of this gateway (e.g. a vendor's own). */
export function openReasoning(token: string): SealedReasoning | undefined {
  if (!token.startsWith(PREFIX)) return undefined;
  try {
    const payload = JSON.parse(Buffer.from(token.slice(PREFIX.length), 'base64url').toString('utf8')) as Record<string, unknown>;
    const { p, m, k, v, t, i } = payload;
    if (typeof p !== 'string' || typeof m !== 'string' || typeof v !== 'string') return undefined;
    if (k !== 'signature' && k !== 'encrypted' && k !== 'redacted') return undefined;
    return {
      origin: { protocol: p, upstreamModel: m },
      kind: k,
      value: v,
      text: typeof t === 'string' ? t : undefined,
      itemId: typeof i === 'string' ? i : undefined,
    };
  } catch {
    return undefined;
  }
}
