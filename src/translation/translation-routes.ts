/**
 * Which upstream protocol a translated call uses (SPEC.md "Translation"): the first of the
 * model's interfaces in this order.
 */
export type TextProtocol = 'chat_completions' | 'responses' | 'messages';
export type TranslatableEntry = 'responses' | 'messages';

const UPSTREAM_ORDER: Record<TranslatableEntry, TextProtocol[]> = {
  responses: ['messages', 'chat_completions'],
  messages: ['responses', 'chat_completions'],
};

export function isTranslatableEntry(entry: string): entry is TranslatableEntry {
  return entry === 'responses' || entry === 'messages';
}

/** The upstream protocol for a model lacking `entry`, or undefined when none of its interfaces fits. */
export function translationTarget(entry: TranslatableEntry, interfaces: readonly string[]): TextProtocol | undefined {
  return UPSTREAM_ORDER[entry].find((protocol) => interfaces.includes(protocol));
}
