import { sealReasoning } from '../canonical/reasoning-seal';
import { decodeMessagesList } from './decode-messages-content';

const UPSTREAM = 'upstream-model-1';
const PDF = 'JVBERi0xLjQK';

function userBlocks(...blocks: unknown[]) {
  return decodeMessagesList([{ role: 'user', content: blocks }])[0].parts;
}

function assistantParts(...blocks: unknown[]) {
  return decodeMessagesList([{ role: 'assistant', content: blocks }])[0].parts;
}

describe(decodeMessagesList.name, () => {
  it('turns string content into one text part and keeps the roles', () => {
    expect(
      decodeMessagesList([
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: 'Hello' },
      ]),
    ).toEqual([
      { role: 'user', parts: [{ type: 'text', text: 'Hi' }] },
      { role: 'assistant', parts: [{ type: 'text', text: 'Hello' }] },
    ]);
  });

  it('turns base64 and URL images into data URLs and addresses', () => {
    expect(
      userBlocks(
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0K' } },
        { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
      ),
    ).toEqual([
      { type: 'image', url: 'data:image/png;base64,iVBORw0K' },
      { type: 'image', url: 'https://example.com/cat.jpg' },
    ]);
  });

  it('turns a base64 PDF into a file, a text document into text, and a content document into its parts', () => {
    expect(
      userBlocks(
        { type: 'document', title: 'report.pdf', source: { type: 'base64', media_type: 'application/pdf', data: PDF } },
        { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'Plain words' } },
        { type: 'document', source: { type: 'content', content: [{ type: 'text', text: 'Chunk' }] } },
        { type: 'document', source: { type: 'content', content: 'Whole' } },
      ),
    ).toEqual([
      { type: 'file', mediaType: 'application/pdf', data: PDF, filename: 'report.pdf' },
      { type: 'text', text: 'Plain words' },
      { type: 'text', text: 'Chunk' },
      { type: 'text', text: 'Whole' },
    ]);
  });

  it('turns tool use input into a JSON string of arguments', () => {
    expect(assistantParts({ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } })).toEqual([
      { type: 'tool_call', id: 'toolu_1', name: 'get_weather', arguments: '{"city":"Paris"}', kind: 'function' },
    ]);
  });

  it('keeps tool results as strings or rich parts, with their error flag', () => {
    expect(
      userBlocks(
        {
          type: 'tool_result',
          tool_use_id: 'a',
          content: [
            { type: 'text', text: 'Done' },
            { type: 'image', source: { type: 'url', url: 'https://x/y.png' } },
          ],
        },
        { type: 'tool_result', tool_use_id: 'b', content: 'Failed', is_error: true },
        { type: 'tool_result', tool_use_id: 'c' },
      ),
    ).toEqual([
      {
        type: 'tool_result',
        callId: 'a',
        content: [
          { type: 'text', text: 'Done' },
          { type: 'image', url: 'https://x/y.png' },
        ],
        kind: 'function',
      },
      { type: 'tool_result', callId: 'b', content: 'Failed', isError: true, kind: 'function' },
      { type: 'tool_result', callId: 'c', content: '', kind: 'function' },
    ]);
  });

  it('opens a sealed thinking signature into reasoning with its origin and upstream data', () => {
    const origin = { protocol: 'responses', upstreamModel: 'gpt-x' };
    const signature = sealReasoning({ origin, kind: 'encrypted', value: 'gAAAA', text: 'Thought', itemId: 'rs_1' });
    const [part] = assistantParts({ type: 'thinking', thinking: 'Thought', signature });
    expect(part).toEqual({ type: 'reasoning', text: 'Thought', opaque: { kind: 'encrypted', value: 'gAAAA', itemId: 'rs_1' }, origin });
  });

  it('takes the sealed text, which the upstream checks verbatim, over the text the client returned', () => {
    const origin = { protocol: 'messages', upstreamModel: UPSTREAM };
    const signature = sealReasoning({ origin, kind: 'signature', value: 'sig', text: 'Original thought' });
    const [part] = assistantParts({ type: 'thinking', thinking: 'Edited thought', signature });
    expect(part).toEqual({ type: 'reasoning', text: 'Original thought', opaque: { kind: 'signature', value: 'sig' }, origin });
  });

  it('keeps an unsealed vendor signature without origin', () => {
    const [part] = assistantParts({ type: 'thinking', thinking: 'Hmm', signature: 'EqQBCkYIBxgC' });
    expect(part).toEqual({ type: 'reasoning', text: 'Hmm', opaque: { kind: 'signature', value: 'EqQBCkYIBxgC' } });
  });

  it('keeps a thinking block with an empty signature as text only', () => {
    const [part] = assistantParts({ type: 'thinking', thinking: 'Hmm', signature: '' });
    expect(part).toEqual({ type: 'reasoning', text: 'Hmm' });
  });

  it('opens redacted thinking: sealed data with origin, vendor data without', () => {
    const origin = { protocol: 'messages', upstreamModel: UPSTREAM };
    const data = sealReasoning({ origin, kind: 'redacted', value: 'vendor-redacted' });
    expect(assistantParts({ type: 'redacted_thinking', data }, { type: 'redacted_thinking', data: 'EmwKAhgB' })).toEqual([
      { type: 'reasoning', text: '', opaque: { kind: 'redacted', value: 'vendor-redacted' }, origin },
      { type: 'reasoning', text: '', opaque: { kind: 'redacted', value: 'EmwKAhgB' } },
    ]);
  });
});
