import { answerProblem, ChatMeter, MessagesMeter } from './response-meter';

describe(answerProblem.name, () => {
  it('finds nothing wrong with an answer object, a null `error` member included', () => {
    expect(answerProblem({ id: 'chatcmpl-1', choices: [] })).toBeNull();
    expect(answerProblem({ object: 'response', error: null })).toBeNull();
  });

  it('names a body that is not a JSON object unreadable', () => {
    for (const answer of [undefined, null, 'text', 42, []]) expect(answerProblem(answer)).toBe('upstream_unreadable_answer');
  });

  it('names an error member sent as an answer', () => {
    expect(answerProblem({ error: { message: 'overloaded' } })).toBe('upstream_error_in_answer');
    expect(answerProblem({ type: 'error', error: { type: 'overloaded_error' } })).toBe('upstream_error_in_answer');
  });
});

describe('meters of JSON answers', () => {
  it('report the problem of a 2xx answer as their error code, and none for a proper answer', () => {
    const broken = new ChatMeter(false);
    broken.readJson(Buffer.from('{"choices":['));
    const fine = new MessagesMeter();
    fine.readJson(Buffer.from('{"type":"message","usage":{"input_tokens":3,"output_tokens":1}}'));

    expect(broken.errorCode()).toBe('upstream_unreadable_answer');
    expect(fine.errorCode()).toBeNull();
  });
});
