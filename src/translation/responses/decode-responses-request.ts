import {
  TranslationRejection,
  type CanonicalRequest,
  type CanonicalTool,
  type CanonicalToolChoice,
  type Mapped,
  type ReasoningEffort,
} from '../canonical/request';
import { decodeResponsesInput, requireRecord } from './decode-responses-input';
import { CUSTOM_TOOL_PARAMETERS, isRecord } from './responses-values';

/**
 * A responses client request → canonical request, for a model without a responses interface
 * (docs/translation.md "Responses entry": every row of that table is handled here).
 * @see https://platform.openai.com/docs/api-reference/responses/create
 */

export interface ResponsesEntryOptions {
  /** The upstream model name that replaces the client's `model`. */
  upstreamModel: string;
  /** The model's maximum output from the catalog, else 64000 (SPEC.md "Limits"). */
  defaultMaxOutputTokens: number;
}

/** Fields that never change an answer; not reported in `X-Gateway-Dropped`. */
const IGNORED_FIELDS = new Set(['metadata', 'user', 'service_tier', 'truncation', 'safety_identifier', 'prompt_cache_key', 'stream_options']);

/** Fields this decoder reads itself; everything else is dropped. */
const READ_FIELDS = new Set([
  'model',
  'input',
  'instructions',
  'tools',
  'tool_choice',
  'reasoning',
  'temperature',
  'top_p',
  'max_output_tokens',
  'text',
  'include',
  'parallel_tool_calls',
  'stream',
  'store',
  'background',
  'previous_response_id',
  'conversation',
]);

const ENCRYPTED_REASONING = 'reasoning.encrypted_content';

export function decodeResponsesRequest(body: Record<string, unknown>, options: ResponsesEntryOptions): Mapped<CanonicalRequest> {
  rejectStatefulRequests(body);
  const { dropped, ignored } = unreadFields(body);
  if (readText(body.text)) dropped.push('text');
  const { tools, droppedSome } = decodeTools(body.tools);
  if (droppedSome) dropped.push('tools');
  const toolChoice = decodeToolChoice(body.tool_choice);
  const reasoning = unlessToolUseIsForced(decodeReasoning(body.reasoning), toolChoice, dropped);
  const decoded = decodeResponsesInput(requireInput(body.input));
  const request: CanonicalRequest = {
    model: options.upstreamModel,
    system: [...decodeInstructions(body.instructions), ...decoded.system],
    messages: decoded.messages,
    tools,
    maxOutputTokens: decodeMaxOutputTokens(body.max_output_tokens, options.defaultMaxOutputTokens),
    stream: optionalBoolean(body.stream, 'stream') ?? false,
  };
  if (toolChoice !== undefined) request.toolChoice = toolChoice;
  const parallelToolCalls = optionalBoolean(body.parallel_tool_calls, 'parallel_tool_calls');
  if (parallelToolCalls !== undefined) request.parallelToolCalls = parallelToolCalls;
  if (reasoning !== undefined) request.reasoning = reasoning;
  if (readInclude(body.include).includes(ENCRYPTED_REASONING)) request.includeOpaqueReasoning = true;
  decodeSampling(body, request, reasoning !== undefined, dropped);
  return { value: request, dropped, ignored };
}

/** Top-level fields this decoder does not read, sorted into ignored and dropped. */
function unreadFields(body: Record<string, unknown>): { dropped: string[]; ignored: string[] } {
  const dropped: string[] = [];
  const ignored: string[] = [];
  for (const [field, value] of Object.entries(body)) {
    // A null field is how several clients spell "not set": it neither rejects nor is reported.
    if (value === null || READ_FIELDS.has(field)) continue;
    (IGNORED_FIELDS.has(field) ? ignored : dropped).push(field);
  }
  // The gateway stores nothing and answers in the foreground anyway: these change nothing.
  if (body.store === false) ignored.push('store');
  if (body.background === false) ignored.push('background');
  return { dropped, ignored };
}

/** Forced tool use switches reasoning off (SPEC.md "Responses entry"); the client asked for it, so say so. */
function unlessToolUseIsForced(
  reasoning: CanonicalRequest['reasoning'],
  toolChoice: CanonicalToolChoice | undefined,
  dropped: string[],
): CanonicalRequest['reasoning'] {
  if (reasoning === undefined || (toolChoice?.type !== 'required' && toolChoice?.type !== 'tool')) return reasoning;
  dropped.push('reasoning');
  return undefined;
}

function requireInput(input: unknown): unknown {
  if (input === undefined || input === null) {
    throw new TranslationRejection('`input` is required: the gateway keeps no stored prompts or conversations.');
  }
  return input;
}

const STATELESS_HINT = 'the gateway stores no responses; send the full context with `store` false.';

function rejectStatefulRequests(body: Record<string, unknown>): void {
  for (const field of ['previous_response_id', 'conversation'] as const) {
    if (body[field] !== undefined && body[field] !== null) {
      throw new TranslationRejection(`\`${field}\` is not supported for this model: ${STATELESS_HINT}`);
    }
  }
  if (body.store === true) throw new TranslationRejection(`\`store: true\` is not supported for this model: ${STATELESS_HINT}`);
  if (body.background === true) throw new TranslationRejection('`background: true` is not supported for this model: only foreground responses are.');
}

function decodeInstructions(value: unknown): string[] {
  if (value === undefined || value === null) return [];
  if (typeof value !== 'string') throw new TranslationRejection('`instructions` must be a string.');
  return [value];
}

function decodeMaxOutputTokens(value: unknown, fallback: number): number {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    throw new TranslationRejection('`max_output_tokens` must be a positive integer.');
  }
  return value;
}

/**
 * Reads `text`: structured output rejects; returns whether anything of it is dropped
 * (`verbosity` has no counterpart upstream). Plain text output is what every upstream gives.
 */
function readText(value: unknown): boolean {
  if (value === undefined || value === null) return false;
  const text = requireRecord(value, '`text`');
  const format = text.format;
  if (format !== undefined && format !== null) {
    const type = requireRecord(format, '`text.format`').type;
    if (type === 'json_schema' || type === 'json_object') {
      throw new TranslationRejection(
        '`text.format` of type json_schema or json_object is not supported for this model: structured output is unavailable on the translation path.',
      );
    }
    if (type !== 'text') throw new TranslationRejection(`\`text.format\` of type ${JSON.stringify(type)} is not supported for this model.`);
  }
  return text.verbosity !== undefined && text.verbosity !== null;
}

function readInclude(value: unknown): unknown[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new TranslationRejection('`include` must be a list.');
  return value;
}

/**
 * Function tools travel as they are; custom tools become one string parameter `input`; hosted
 * tools (web search, file search, code interpreter, MCP, …) have no upstream counterpart.
 * `strict` is carried only when the client set it: responses defaults it on, but a schema the
 * client never made strict-compatible would then fail upstream.
 */
function decodeTools(value: unknown): { tools: CanonicalTool[]; droppedSome: boolean } {
  if (value === undefined || value === null) return { tools: [], droppedSome: false };
  if (!Array.isArray(value)) throw new TranslationRejection('`tools` must be a list.');
  const tools: CanonicalTool[] = [];
  let droppedSome = false;
  value.forEach((raw, index) => {
    const tool = requireRecord(raw, `tools[${index}]`);
    if (tool.type === 'function') tools.push(decodeFunctionTool(tool, index));
    else if (tool.type === 'custom') {
      tools.push(decodeCustomTool(tool, index));
      // A grammar-constrained custom tool loses its grammar: the upstream sees a plain string.
      if (isRecord(tool.format) && tool.format.type !== 'text') droppedSome = true;
    } else droppedSome = true;
  });
  return { tools, droppedSome };
}

function decodeFunctionTool(tool: Record<string, unknown>, index: number): CanonicalTool {
  const given = tool.parameters;
  const parameters = given === undefined || given === null ? { type: 'object', properties: {} } : requireRecord(given, `tools[${index}].parameters`);
  const decoded: CanonicalTool = { name: toolName(tool, index), parameters, kind: 'function' };
  if (typeof tool.description === 'string') decoded.description = tool.description;
  if (typeof tool.strict === 'boolean') decoded.strict = tool.strict;
  return decoded;
}

function decodeCustomTool(tool: Record<string, unknown>, index: number): CanonicalTool {
  const decoded: CanonicalTool = { name: toolName(tool, index), parameters: CUSTOM_TOOL_PARAMETERS, kind: 'custom' };
  if (typeof tool.description === 'string') decoded.description = tool.description;
  return decoded;
}

function toolName(tool: Record<string, unknown>, index: number): string {
  if (typeof tool.name !== 'string' || tool.name === '') throw new TranslationRejection(`tools[${index}].name must be a non-empty string.`);
  return tool.name;
}

/** @see https://platform.openai.com/docs/api-reference/responses/create#responses-create-tool_choice */
function decodeToolChoice(value: unknown): CanonicalToolChoice | undefined {
  if (value === undefined || value === null) return undefined;
  if (value === 'auto' || value === 'none' || value === 'required') return { type: value };
  if (isRecord(value) && (value.type === 'function' || value.type === 'custom') && typeof value.name === 'string') {
    return { type: 'tool', name: value.name };
  }
  throw new TranslationRejection('`tool_choice` must be auto, none, required, or one named function or custom tool for this model.');
}

/**
 * `effort` sets the strength (`none` is off); a `summary` without an effort asks for the API's
 * default strength, medium. `xhigh` has no stronger canonical level than high.
 * @see https://platform.openai.com/docs/api-reference/responses/create#responses-create-reasoning
 */
function decodeReasoning(value: unknown): CanonicalRequest['reasoning'] {
  if (value === undefined || value === null) return undefined;
  const reasoning = requireRecord(value, '`reasoning`');
  const summaryValue = reasoning.summary ?? reasoning.generate_summary;
  const summary = summaryValue !== undefined && summaryValue !== null;
  const effort = reasoning.effort ?? (summary ? 'medium' : undefined);
  if (effort === undefined || effort === 'none') return undefined;
  const strength = decodeEffort(effort);
  return summary ? { effort: strength, summary: true } : { effort: strength };
}

function decodeEffort(effort: unknown): ReasoningEffort {
  switch (effort) {
    case 'minimal':
    case 'low':
    case 'medium':
    case 'high':
      return effort;
    case 'xhigh':
      return 'high';
    default:
      throw new TranslationRejection('`reasoning.effort` must be none, minimal, low, medium, high or xhigh.');
  }
}

/** Reasoning upstreams refuse sampling settings, so they are dropped while reasoning is on. */
function decodeSampling(body: Record<string, unknown>, request: CanonicalRequest, reasoningOn: boolean, dropped: string[]): void {
  const temperature = optionalNumber(body.temperature, 'temperature');
  const topP = optionalNumber(body.top_p, 'top_p');
  if (temperature !== undefined) {
    if (reasoningOn) dropped.push('temperature');
    else request.temperature = temperature;
  }
  if (topP !== undefined) {
    if (reasoningOn) dropped.push('top_p');
    else request.topP = topP;
  }
}

function optionalNumber(value: unknown, field: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value)) throw new TranslationRejection(`\`${field}\` must be a number.`);
  return value;
}

function optionalBoolean(value: unknown, field: string): boolean | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'boolean') throw new TranslationRejection(`\`${field}\` must be a boolean.`);
  return value;
}
