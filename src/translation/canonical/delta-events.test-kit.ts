import type { CanonicalEvent } from './events';
import type { ReasoningOrigin } from './request';

/** Text that JSON must escape, or that a careless encoder mangles: quotes, a backslash, a newline, U+2028, a lone surrogate, `</script>`. */
export const AWKWARD_TEXT = 'é "q" \\ \n \u2028 \ud800 </script>';

/**
 * A canonical answer with a delta of each kind, for the encoders' delta events (written as text,
 * not through `JSON.stringify` of an event object): reasoning (with opaque data, so a messages
 * client gets a signature), text and a function call's arguments.
 */
export function deltaOfEachKind(origin: ReasoningOrigin): CanonicalEvent[] {
  return [
    { type: 'start', id: 'up_1', model: 'model-up' },
    { type: 'reasoning_start', index: 0, origin },
    { type: 'reasoning_delta', index: 0, text: AWKWARD_TEXT },
    { type: 'reasoning_opaque', index: 0, kind: 'encrypted', value: 'gAAAA', itemId: 'rs_up' },
    { type: 'part_end', index: 0 },
    { type: 'text_start', index: 1 },
    { type: 'text_delta', index: 1, text: AWKWARD_TEXT },
    { type: 'part_end', index: 1 },
    { type: 'tool_call_start', index: 2, id: 'call_1', name: 'get_weather', kind: 'function' },
    { type: 'tool_call_delta', index: 2, arguments: '{"city":' },
    { type: 'part_end', index: 2 },
    { type: 'finish', stopReason: 'tool_calls' },
    { type: 'end' },
  ];
}
