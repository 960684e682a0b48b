/**
 * Small readers of untyped JSON shared by the responses adapter. Wire bodies are `unknown`
 * until read; these keep each reader a line long without casting.
 */

export function asRecord(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

export function stringOr(value: unknown, fallback: string): string {
  return typeof value === 'string' ? value : fallback;
}

export function nonEmptyString(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

export function records(value: unknown): Record<string, unknown>[] {
  return Array.isArray(value) ? value.map(asRecord) : [];
}

export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * Schema of the one string parameter a custom (free-form) tool is carried as
 * (docs/translation.md "Canonical conventions").
 */
export const CUSTOM_TOOL_PARAMETERS: Record<string, unknown> = {
  type: 'object',
  properties: { input: { type: 'string' } },
  required: ['input'],
};

/** Arguments of a custom tool call as carried canonically: `{"input": "..."}`. */
export function wrapCustomInput(input: string): string {
  return JSON.stringify({ input });
}

/**
 * The free-form input back out of `{"input": ...}` arguments. A model that ignored the schema
 * may send other JSON or none at all; the client then gets the arguments as they came, which
 * is more useful to it than an empty string.
 */
export function unwrapCustomInput(argumentsText: string): string {
  const parsed = parseJson(argumentsText);
  if (!isRecord(parsed) || !('input' in parsed)) return argumentsText;
  return typeof parsed.input === 'string' ? parsed.input : JSON.stringify(parsed.input);
}
