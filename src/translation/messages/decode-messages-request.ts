import {
  TranslationRejection,
  type CanonicalRequest,
  type CanonicalTool,
  type CanonicalToolChoice,
  type Mapped,
  type ReasoningEffort,
} from '../canonical/request';
import { decodeMessagesList } from './decode-messages-content';
import { isRecord, numberOf, stringOf } from './messages-values';

/**
 * A client's messages request → the canonical request (docs/translation.md "Messages entry").
 * @see https://docs.anthropic.com/en/api/messages
 */

/** Fields turned into canonical ones; every other top-level field is ignored or dropped. */
const CONVERTED = new Set([
  'model',
  'system',
  'messages',
  'tools',
  'tool_choice',
  'max_tokens',
  'stream',
  'thinking',
  'output_config',
  'temperature',
  'top_p',
  'stop_sequences',
]);
/** Fields that never change an answer. */
const IGNORED = new Set(['metadata', 'service_tier']);

/** Thinking budgets at these sizes or more mean a stronger effort (SPEC.md "Limits"). */
const MEDIUM_BUDGET = 4096;
const HIGH_BUDGET = 16384;

export function decodeMessagesRequest(body: Record<string, unknown>, options: { upstreamModel: string }): Mapped<CanonicalRequest> {
  const dropped = new Set<string>();
  const maxOutputTokens = decodeMaxTokens(body.max_tokens);
  const messages = decodeMessagesList(body.messages);
  const tools = decodeTools(body.tools, dropped);
  const toolChoice = decodeToolChoice(body.tool_choice);
  const reasoning = decodeReasoning(body, toolChoice, dropped);
  const value: CanonicalRequest = {
    model: options.upstreamModel,
    system: decodeSystem(body.system),
    messages,
    tools,
    maxOutputTokens,
    stream: body.stream === true,
    ...(toolChoice && { toolChoice }),
    ...(isRecord(body.tool_choice) && body.tool_choice.disable_parallel_tool_use === true && { parallelToolCalls: false }),
    ...decodeSampling(body),
    ...(reasoning && { reasoning: { effort: reasoning, summary: true }, includeOpaqueReasoning: true }),
  };
  return { value, ...classifyFields(body, dropped) };
}

/** Reports fields in the order the client wrote them; absent (null) fields have no effect. */
function classifyFields(body: Record<string, unknown>, dropped: Set<string>): { dropped: string[]; ignored: string[] } {
  const present = Object.keys(body).filter((field) => body[field] !== undefined && body[field] !== null);
  return {
    dropped: present.filter((field) => dropped.has(field) || (!CONVERTED.has(field) && !IGNORED.has(field))),
    ignored: present.filter((field) => IGNORED.has(field)),
  };
}

function decodeMaxTokens(value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    throw new TranslationRejection('max_tokens: Field required (a positive integer).');
  }
  return value;
}

/** A string, or text blocks; each block stays its own entry, in order. */
function decodeSystem(value: unknown): string[] {
  if (value === undefined || value === null) return [];
  if (typeof value === 'string') return value === '' ? [] : [value];
  if (!Array.isArray(value)) throw new TranslationRejection('system: must be a string or a list of text blocks.');
  return value
    .map((block, index) => {
      if (!isRecord(block) || block.type !== 'text' || typeof block.text !== 'string') {
        throw new TranslationRejection(`system.${index}: must be a text block.`);
      }
      return block.text;
    })
    .filter((text) => text !== '');
}

/** Client tools (no `type`, or `custom`) are functions; typed server tools cannot be carried. */
function decodeTools(value: unknown, dropped: Set<string>): CanonicalTool[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new TranslationRejection('tools: must be a list of tools.');
  const tools: CanonicalTool[] = [];
  value.forEach((tool, index) => {
    if (!isRecord(tool)) throw new TranslationRejection(`tools.${index}: must be a tool object.`);
    if (tool.type === undefined || tool.type === null || tool.type === 'custom') tools.push(decodeTool(tool, `tools.${index}`));
    else dropped.add('tools');
  });
  return tools;
}

function decodeTool(tool: Record<string, unknown>, path: string): CanonicalTool {
  const name = stringOf(tool.name);
  if (name === undefined) throw new TranslationRejection(`${path}.name: Field required.`);
  if (!isRecord(tool.input_schema)) throw new TranslationRejection(`${path}.input_schema: Field required (a JSON schema object).`);
  const description = stringOf(tool.description);
  return {
    name,
    parameters: tool.input_schema,
    kind: 'function',
    ...(description !== undefined && { description }),
    ...(typeof tool.strict === 'boolean' && { strict: tool.strict }),
  };
}

/** @see https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use#forcing-tool-use */
function decodeToolChoice(value: unknown): CanonicalToolChoice | undefined {
  if (value === undefined || value === null) return undefined;
  const choice = isRecord(value) ? value : {};
  switch (choice.type) {
    case 'auto':
      return { type: 'auto' };
    case 'any':
      return { type: 'required' };
    case 'none':
      return { type: 'none' };
    case 'tool': {
      const name = stringOf(choice.name);
      if (name === undefined) throw new TranslationRejection('tool_choice.name: Field required when type is "tool".');
      return { type: 'tool', name };
    }
    default:
      throw new TranslationRejection('tool_choice.type: must be "auto", "any", "tool" or "none".');
  }
}

function decodeSampling(body: Record<string, unknown>): Pick<CanonicalRequest, 'temperature' | 'topP' | 'stop'> {
  const temperature = optionalNumber(body.temperature, 'temperature');
  const topP = optionalNumber(body.top_p, 'top_p');
  const stop = decodeStopSequences(body.stop_sequences);
  return {
    ...(temperature !== undefined && { temperature }),
    ...(topP !== undefined && { topP }),
    ...(stop.length > 0 && { stop }),
  };
}

function optionalNumber(value: unknown, field: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  const number = numberOf(value);
  if (number === undefined) throw new TranslationRejection(`${field}: must be a number.`);
  return number;
}

function decodeStopSequences(value: unknown): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string')) {
    throw new TranslationRejection('stop_sequences: must be a list of strings.');
  }
  return value as string[];
}

/**
 * Reasoning strength: `output_config.effort` wins over `thinking`. Forced tool use turns it off
 * (messages upstreams refuse it with thinking, and the responses entry has the same rule); the
 * client's field that asked for it is then reported as dropped.
 */
function decodeReasoning(body: Record<string, unknown>, toolChoice: CanonicalToolChoice | undefined, dropped: Set<string>): ReasoningEffort | undefined {
  const fromEffort = decodeOutputConfig(body.output_config, dropped);
  const effort = fromEffort ?? decodeThinking(body.thinking, dropped);
  if (effort === undefined) return undefined;
  if (toolChoice?.type === 'required' || toolChoice?.type === 'tool') {
    dropped.add(fromEffort === undefined ? 'thinking' : 'output_config');
    return undefined;
  }
  return effort;
}

/** @see https://docs.anthropic.com/en/docs/build-with-claude/effort */
function decodeOutputConfig(value: unknown, dropped: Set<string>): ReasoningEffort | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isRecord(value)) throw new TranslationRejection('output_config: must be an object.');
  const { effort, ...others } = value;
  if (Object.values(others).some((other) => other !== undefined && other !== null)) dropped.add('output_config');
  switch (effort) {
    case undefined:
    case null:
      return undefined;
    case 'low':
    case 'medium':
    case 'high':
      return effort;
    // Stronger settings than the canonical scale has: the strongest it has.
    case 'xhigh':
    case 'max':
      return 'high';
    default:
      throw new TranslationRejection('output_config.effort: must be "low", "medium", "high" or "max".');
  }
}

/** @see https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking */
function decodeThinking(value: unknown, dropped: Set<string>): ReasoningEffort | undefined {
  if (value === undefined || value === null) return undefined;
  const thinking = isRecord(value) ? value : {};
  switch (thinking.type) {
    case 'enabled':
      return effortOfBudget(thinking.budget_tokens);
    case 'adaptive':
      return 'medium';
    case 'disabled':
      return undefined;
    default:
      // A thinking mode newer than this code: reported, not guessed at.
      dropped.add('thinking');
      return undefined;
  }
}

function effortOfBudget(value: unknown): ReasoningEffort {
  const budget = numberOf(value);
  if (budget === undefined) throw new TranslationRejection('thinking.budget_tokens: Field required when thinking is enabled.');
  if (budget < MEDIUM_BUDGET) return 'low';
  return budget >= HIGH_BUDGET ? 'high' : 'medium';
}
