import { createHash, randomBytes } from 'node:crypto';

/**
 * The simulator's "model": a pure, deterministic function from a protocol-neutral view of the
 * request (a Turn) to what the model says (a Reply). Each route decodes its own wire format into
 * a Turn and encodes the Reply back, so all protocols follow the same rules.
 */

export interface ToolSpec {
  name: string;
  /** JSON schema of the arguments, as declared by the caller. */
  parameters: unknown;
}

export type ToolChoice = { kind: 'auto' | 'none' | 'required' } | { kind: 'named'; name: string };

export interface Turn {
  model: string;
  /** Text of the last user message (empty when there is none). */
  userText: string;
  /** True when the conversation ends with a user message (not a tool result, not a prefill). */
  endsWithUser: boolean;
  /** Set when the conversation ends with a tool result: the result's text. */
  toolResult?: string;
  tools: ToolSpec[];
  toolChoice: ToolChoice;
  allowParallelCalls: boolean;
  reasoning: boolean;
  /** Output token limit asked for (max_tokens and friends). */
  outputLimit?: number;
  inputTokens: number;
  cachedTokens: number;
  /** Input tokens written to the cache for 5 minutes and for an hour (only messages reports them). */
  cacheWrite5mTokens: number;
  cacheWrite1hTokens: number;
}

export interface ToolCall {
  name: string;
  arguments: string;
}

export interface Reply {
  text: string;
  toolCalls: ToolCall[];
  /** Reasoning text when the request turned reasoning on. */
  reasoning?: string;
  /** True when the text was cut at the output limit. */
  truncated: boolean;
  usage: ReplyUsage;
}

export interface ReplyUsage {
  /** All input tokens, cached ones and cache writes included (the OpenAI convention). */
  inputTokens: number;
  cachedTokens: number;
  /** Cache writes by how long the entry lives; part of `inputTokens`, reported by messages only. */
  cacheWrite5mTokens: number;
  cacheWrite1hTokens: number;
  /** All output tokens, reasoning included. */
  outputTokens: number;
  reasoningTokens: number;
}

/** Marker in a request body that makes the simulator report cached input tokens. */
export const CACHE_MARKER = 'cache-me';

/**
 * Markers in a request body that make the simulator report cache writes of a quarter of the
 * input each, for 5 minutes and for an hour (messages `usage.cache_creation`).
 */
export const CACHE_WRITE_5M_MARKER = 'cache-write-5m';
export const CACHE_WRITE_1H_MARKER = 'cache-write-1h';

/** Value given to the first required string property of a called tool. */
export const FIRST_STRING_ARGUMENT = 'Paris';

export function planReply(turn: Turn): Reply {
  const reasoning = turn.reasoning ? reasoningFor(turn) : undefined;
  const toolCalls = shouldCallTool(turn) ? plannedCalls(turn) : [];
  const fullText = toolCalls.length > 0 ? '' : answerFor(turn);
  const { text, truncated } = truncateWords(fullText, turn.outputLimit);
  const reasoningTokens = reasoning ? countWords(reasoning) : 0;
  const callTokens = toolCalls.reduce((sum, call) => sum + countWords(call.arguments), 0);
  return {
    text,
    toolCalls,
    reasoning,
    truncated,
    usage: {
      inputTokens: turn.inputTokens,
      cachedTokens: turn.cachedTokens,
      cacheWrite5mTokens: turn.cacheWrite5mTokens,
      cacheWrite1hTokens: turn.cacheWrite1hTokens,
      outputTokens: countWords(text) + callTokens + reasoningTokens,
      reasoningTokens,
    },
  };
}

/** The tool is called only in answer to a user message, so a tool result always gets text. */
function shouldCallTool(turn: Turn): boolean {
  return turn.endsWithUser && turn.tools.length > 0 && turn.toolChoice.kind !== 'none';
}

function plannedCalls(turn: Turn): ToolCall[] {
  const choice = turn.toolChoice;
  const tool = (choice.kind === 'named' && turn.tools.find((candidate) => candidate.name === choice.name)) || turn.tools[0];
  const call = { name: tool.name, arguments: JSON.stringify(argumentsFromSchema(tool.parameters)) };
  const parallel = turn.allowParallelCalls && /\bparallel\b/i.test(turn.userText);
  return parallel ? [call, { ...call }] : [call];
}

function answerFor(turn: Turn): string {
  if (turn.toolResult !== undefined) return `Hello from ${turn.model}: the tool said ${turn.toolResult}`.trim();
  return `Hello from ${turn.model}: ${turn.userText}`.trim();
}

function reasoningFor(turn: Turn): string {
  const topic = turn.toolResult ?? turn.userText;
  return `Thinking about "${topic}" before answering.`;
}

/**
 * Arguments that satisfy the usual weather-tool schemas: the first required string property
 * gets "Paris", other required properties get a plain value of their type.
 */
export function argumentsFromSchema(schema: unknown): Record<string, unknown> {
  const object = asRecord(schema);
  const properties = asRecord(object.properties);
  const required = Array.isArray(object.required) ? object.required.filter((name) => typeof name === 'string') : [];
  const result: Record<string, unknown> = {};
  let firstString = true;
  for (const name of required) {
    const property = asRecord(properties[name]);
    if (Array.isArray(property.enum) && property.enum.length > 0) {
      result[name] = property.enum[0];
    } else if (property.type === 'string') {
      result[name] = firstString ? FIRST_STRING_ARGUMENT : 'value';
      firstString = false;
    } else {
      result[name] = plainValueOf(property.type);
    }
  }
  return result;
}

function plainValueOf(type: unknown): unknown {
  switch (type) {
    case 'number':
    case 'integer':
      return 1;
    case 'boolean':
      return true;
    case 'array':
      return [];
    case 'object':
      return {};
    default:
      return 'value';
  }
}

export function countWords(text: string): number {
  return text.split(/\s+/).filter(Boolean).length;
}

/** Pieces that each start with the whitespace before a word, so joining them gives the text. */
export function splitWords(text: string): string[] {
  return text.match(/\s*\S+/g) ?? [];
}

/** Fixed-size pieces, the way tool-call arguments arrive from real models. */
export function splitFixed(text: string, size = 6): string[] {
  const pieces: string[] = [];
  for (let start = 0; start < text.length; start += size) pieces.push(text.slice(start, start + size));
  return pieces;
}

function truncateWords(text: string, limit: number | undefined): { text: string; truncated: boolean } {
  const words = splitWords(text);
  if (limit === undefined || words.length <= limit) return { text, truncated: false };
  return { text: words.slice(0, Math.max(limit, 0)).join('').trim(), truncated: true };
}

/** Input tokens: a quarter of the UTF-8 bytes of the JSON of what the protocol counts as input. */
export function estimateTokens(value: unknown): number {
  return Math.ceil(Buffer.byteLength(JSON.stringify(value ?? null), 'utf8') / 4);
}

/**
 * Input figures for a request: half the input counts as cached, and a quarter each as written to
 * the cache for 5 minutes and for an hour, when the body has the markers (so they never add up
 * to more than the input).
 */
export function measureInput(
  counted: unknown,
  rawBody: string,
): { inputTokens: number; cachedTokens: number; cacheWrite5mTokens: number; cacheWrite1hTokens: number } {
  const inputTokens = estimateTokens(counted);
  const share = (marker: string, divisor: number) => (rawBody.includes(marker) ? Math.floor(inputTokens / divisor) : 0);
  return {
    inputTokens,
    cachedTokens: share(CACHE_MARKER, 2),
    cacheWrite5mTokens: share(CACHE_WRITE_5M_MARKER, 4),
    cacheWrite1hTokens: share(CACHE_WRITE_1H_MARKER, 4),
  };
}

/** Ids shaped like the vendors' (`chatcmpl-…`, `resp_…`, `toolu_…`): prefix plus random letters. */
export function newId(prefix: string, length = 24): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  const bytes = randomBytes(length);
  let suffix = '';
  for (const byte of bytes) suffix += alphabet[byte % alphabet.length];
  return prefix + suffix;
}

/** Opaque but reproducible blobs (signatures, encrypted reasoning) so continuations can be checked. */
export function opaqueToken(label: string, text: string): string {
  return createHash('sha256').update(`${label}:${text}`).digest('base64');
}

export function unixSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

export function asRecord(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

/** Text of a string or of an array of `{ text }` parts (the shape every protocol uses for content). */
export function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part) => asRecord(part).text)
    .filter((text): text is string => typeof text === 'string')
    .join(' ');
}

export function optionalNumber(...values: unknown[]): number | undefined {
  return values.find((value): value is number => typeof value === 'number');
}
