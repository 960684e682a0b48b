import { splitFixed, splitWords, type Reply } from './scripted-model';
import { encodeResponse, type OutputItem, type ResponseFrame } from './responses-encoding';
import { jsonEvent, obfuscation } from './sse-writer';
import type { SseEvent } from './simulator-types';

/**
 * Responses streaming: named events, each with a `sequence_number` counting from 0. Every
 * output item is opened (`output_item.added`), filled by deltas under its `output_index`, and
 * closed (`output_item.done`) before the next one; the stream ends with `response.completed`
 * (or `response.incomplete`), never with `[DONE]`.
 * @see https://platform.openai.com/docs/api-reference/responses-streaming
 */

class EventLog {
  readonly events: SseEvent[] = [];
  private sequence = 0;

  push(type: string, payload: Record<string, unknown>): void {
    this.events.push(jsonEvent({ type, sequence_number: this.sequence++, ...payload }, type));
  }
}

export function encodeResponsesStream(reply: Reply, frame: ResponseFrame, output: OutputItem[]): SseEvent[] {
  const log = new EventLog();
  const snapshot = encodeResponse(frame, []);
  log.push('response.created', { response: snapshot });
  log.push('response.in_progress', { response: snapshot });
  output.forEach((item, index) => streamItem(log, item, index));
  const final = encodeResponse(frame, output, reply);
  log.push(reply.truncated ? 'response.incomplete' : 'response.completed', { response: final });
  return log.events;
}

function streamItem(log: EventLog, item: OutputItem, outputIndex: number): void {
  switch (item.type) {
    case 'reasoning':
      return streamReasoning(log, item, outputIndex);
    case 'message':
      return streamMessage(log, item, outputIndex);
    case 'function_call':
      return streamFunctionCall(log, item, outputIndex);
  }
}

function streamReasoning(log: EventLog, item: Extract<OutputItem, { type: 'reasoning' }>, outputIndex: number): void {
  const opened: Record<string, unknown> = { id: item.id, type: 'reasoning', summary: [] };
  if (item.encrypted_content !== undefined) opened.encrypted_content = item.encrypted_content;
  log.push('response.output_item.added', { output_index: outputIndex, item: opened });
  item.summary.forEach((part, summaryIndex) => {
    const place = { item_id: item.id, output_index: outputIndex, summary_index: summaryIndex };
    log.push('response.reasoning_summary_part.added', { ...place, part: { type: 'summary_text', text: '' } });
    for (const delta of splitWords(part.text)) {
      log.push('response.reasoning_summary_text.delta', { ...place, delta, obfuscation: obfuscation(delta) });
    }
    log.push('response.reasoning_summary_text.done', { ...place, text: part.text });
    log.push('response.reasoning_summary_part.done', { ...place, part });
  });
  log.push('response.output_item.done', { output_index: outputIndex, item });
}

function streamMessage(log: EventLog, item: Extract<OutputItem, { type: 'message' }>, outputIndex: number): void {
  const opened = { id: item.id, type: 'message', status: 'in_progress', content: [], role: 'assistant' };
  log.push('response.output_item.added', { output_index: outputIndex, item: opened });
  item.content.forEach((part, contentIndex) => {
    const place = { item_id: item.id, output_index: outputIndex, content_index: contentIndex };
    log.push('response.content_part.added', { ...place, part: { ...part, text: '' } });
    for (const delta of splitWords(part.text)) {
      log.push('response.output_text.delta', { ...place, delta, logprobs: [], obfuscation: obfuscation(delta) });
    }
    log.push('response.output_text.done', { ...place, text: part.text, logprobs: [] });
    log.push('response.content_part.done', { ...place, part });
  });
  log.push('response.output_item.done', { output_index: outputIndex, item });
}

function streamFunctionCall(log: EventLog, item: Extract<OutputItem, { type: 'function_call' }>, outputIndex: number): void {
  const opened = { ...item, status: 'in_progress', arguments: '' };
  log.push('response.output_item.added', { output_index: outputIndex, item: opened });
  const place = { item_id: item.id, output_index: outputIndex };
  for (const delta of splitFixed(item.arguments)) {
    log.push('response.function_call_arguments.delta', { ...place, delta, obfuscation: obfuscation(delta) });
  }
  log.push('response.function_call_arguments.done', { ...place, name: item.name, arguments: item.arguments });
  log.push('response.output_item.done', { output_index: outputIndex, item });
}
