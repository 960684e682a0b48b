import { asRecord, measureInput, newId, optionalNumber, planReply, textOf, unixSeconds, type ToolChoice, type ToolSpec, type Turn } from './scripted-model';
import { buildOutput, encodeResponse } from './responses-encoding';
import { encodeResponsesStream } from './responses-stream';
import type { Route } from './simulator-types';

/**
 * OpenAI Responses: `POST /v1/responses`, a Response object or its typed SSE events.
 * @see https://platform.openai.com/docs/api-reference/responses/create
 * @see https://platform.openai.com/docs/api-reference/responses-streaming
 */

export const responsesRoute: Route = {
  vendor: 'openai',
  async handle(context) {
    if (typeof context.body.model !== 'string') return context.reject(400, "Missing required parameter: 'model'.");
    const turn = decodeResponsesTurn(context.body, context.rawBody);
    const reply = planReply(turn);
    const frame = { id: newId('resp_', 48), createdAt: unixSeconds(), model: turn.model, body: context.body };
    const output = buildOutput(reply, context.body);
    if (context.body.stream === true) return context.events(encodeResponsesStream(reply, frame, output));
    return context.json(200, encodeResponse(frame, output, reply));
  },
};

export function decodeResponsesTurn(body: Record<string, unknown>, rawBody: string): Turn {
  const items = typeof body.input === 'string' ? [{ role: 'user', content: body.input }] : arrayOfRecords(body.input);
  const last = items[items.length - 1] ?? {};
  const lastUser = [...items].reverse().find((item) => item.role === 'user');
  const effort = asRecord(body.reasoning).effort;
  return {
    model: body.model as string,
    userText: textOf(lastUser?.content),
    endsWithUser: last.role === 'user',
    toolResult: last.type === 'function_call_output' ? textOf(last.output) : undefined,
    tools: decodeTools(body.tools),
    toolChoice: decodeToolChoice(body.tool_choice),
    allowParallelCalls: body.parallel_tool_calls !== false,
    reasoning: typeof effort === 'string' && effort !== 'none',
    outputLimit: optionalNumber(body.max_output_tokens),
    ...measureInput({ instructions: body.instructions, input: body.input }, rawBody),
  };
}

function arrayOfRecords(value: unknown): Record<string, unknown>[] {
  return Array.isArray(value) ? value.map(asRecord) : [];
}

function decodeTools(tools: unknown): ToolSpec[] {
  return arrayOfRecords(tools)
    .filter((tool) => tool.type === 'function')
    .map((tool) => ({ name: String(tool.name), parameters: tool.parameters }));
}

function decodeToolChoice(choice: unknown): ToolChoice {
  if (choice === 'none' || choice === 'required' || choice === 'auto') return { kind: choice };
  const named = asRecord(choice);
  return named.type === 'function' && typeof named.name === 'string' ? { kind: 'named', name: named.name } : { kind: 'auto' };
}
