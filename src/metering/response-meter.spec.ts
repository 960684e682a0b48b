import { answerProblem, ChatMeter, isErrorEvent, MessagesMeter, ResponsesMeter } from './response-meter';

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

describe(isErrorEvent.name, () => {
  const event = (data: unknown, name?: string) => Buffer.from(`${name ? `event: ${name}\n` : ''}data: ${JSON.stringify(data)}\n\n`);

  it('finds the error chunk of chat, and the error event of messages and responses', () => {
    expect(isErrorEvent(event({ error: { message: 'overloaded', type: 'server_error' } }))).toBe(true);
    expect(isErrorEvent(event({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }, 'error'))).toBe(true);
    expect(isErrorEvent(event({ type: 'error', code: 'server_error', message: 'boom', sequence_number: 4 }, 'error'))).toBe(true);
  });

  it('leaves ordinary events alone, the word error in their text and a null error member included', () => {
    expect(isErrorEvent(event({ choices: [{ index: 0, delta: { content: 'an "error" in the text' } }] }))).toBe(false);
    expect(isErrorEvent(event({ type: 'response.completed', response: { status: 'completed', error: null } }, 'response.completed'))).toBe(false);
    expect(isErrorEvent(Buffer.from('data: [DONE]\n\n'))).toBe(false);
    expect(isErrorEvent(Buffer.from(': "error"\n\n'))).toBe(false);
  });
});

describe('meters of streams', () => {
  const event = (data: unknown, name?: string) => Buffer.from(`${name ? `event: ${name}\n` : ''}data: ${JSON.stringify(data)}\n\n`);

  it('report an error the upstream sent inside the stream, and keep the figures seen before it', () => {
    const chat = new ChatMeter(true);
    chat.readEvent(event({ choices: [], usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 } }));
    chat.readEvent(event({ error: { message: 'overloaded' } }));
    const messages = new MessagesMeter();
    messages.readEvent(event({ type: 'message_start', message: { usage: { input_tokens: 4, output_tokens: 1 } } }, 'message_start'));
    messages.readEvent(event({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }, 'error'));
    const failed = new ResponsesMeter();
    failed.readEvent(event({ type: 'response.failed', response: { status: 'failed', error: { code: 'server_error' }, usage: null } }, 'response.failed'));

    expect(chat.errorCode()).toBe('upstream_error_in_stream');
    expect(chat.figures()).toMatchObject({ input_tokens: 5, output_tokens: 2 });
    expect(messages.errorCode()).toBe('upstream_error_in_stream');
    expect(messages.figures()).toMatchObject({ input_tokens: 4 });
    expect(failed.errorCode()).toBe('upstream_error_in_stream');
  });

  it('report nothing for a stream that ends normally', () => {
    const responses = new ResponsesMeter();
    responses.readEvent(
      event(
        { type: 'response.completed', response: { status: 'completed', error: null, usage: { input_tokens: 3, output_tokens: 2, total_tokens: 5 } } },
        'response.completed',
      ),
    );
    const chat = new ChatMeter(false);
    chat.readEvent(event({ choices: [{ index: 0, delta: { content: 'hi' } }] }));

    expect(responses.errorCode()).toBeNull();
    expect(chat.errorCode()).toBeNull();
  });

  it('read the usage from the events of each protocol that carry it (events are screened by a word search first)', () => {
    const completed = new ResponsesMeter();
    completed.readEvent(event({ type: 'response.created', response: { status: 'in_progress', usage: null } }, 'response.created'));
    completed.readEvent(
      event({ type: 'response.completed', response: { usage: { input_tokens: 3, output_tokens: 2, total_tokens: 5 } } }, 'response.completed'),
    );
    const incomplete = new ResponsesMeter();
    incomplete.readEvent(
      event({ type: 'response.incomplete', response: { usage: { input_tokens: 7, output_tokens: 9, total_tokens: 16 } } }, 'response.incomplete'),
    );
    const messages = new MessagesMeter();
    messages.readEvent(event({ type: 'message_start', message: { usage: { input_tokens: 4, output_tokens: 1 } } }, 'message_start'));
    messages.readEvent(event({ type: 'content_block_delta', delta: { type: 'text_delta', text: '"usage"' } }, 'content_block_delta'));
    messages.readEvent(event({ type: 'message_delta', usage: { output_tokens: 12 } }, 'message_delta'));
    const chat = new ChatMeter(false);
    const kept = chat.readEvent(event({ choices: [], usage: { prompt_tokens: 2, completion_tokens: 6, total_tokens: 8 } }));

    expect(completed.figures()).toMatchObject({ input_tokens: 3, output_tokens: 2 });
    expect(incomplete.figures()).toMatchObject({ input_tokens: 7, output_tokens: 9 });
    expect(messages.figures()).toMatchObject({ input_tokens: 4, output_tokens: 12 });
    expect(chat.figures()).toMatchObject({ input_tokens: 2, output_tokens: 6 });
    expect(kept).toBe(false);
  });

  it('parse no chat chunk whose usage is null, as every chunk is once the gateway asks for include_usage', () => {
    const chat = new ChatMeter(true);
    const parse = jest.spyOn(JSON, 'parse');
    try {
      const kept = [
        Buffer.from('data: {"choices":[{"index":0,"delta":{"content":"hi"}}],"usage":null}\n\n'),
        Buffer.from('data: {"choices":[{"index":0,"delta":{"content":"\\"usage\\": 3"}}], "usage" : null}\n\n'),
      ].map((raw) => chat.readEvent(raw));

      expect(kept).toEqual([true, true]);
      expect(parse).not.toHaveBeenCalled();
    } finally {
      parse.mockRestore();
    }
    expect(chat.figures()).toBeUndefined();
  });

  it('parse no responses event whose error member is null (response.created, response.in_progress), and still find an error event', () => {
    const responses = new ResponsesMeter();
    const response = { id: 'resp_1', status: 'in_progress', error: null, incomplete_details: null, instructions: 'Be brief.', tools: [], usage: null };
    const parse = jest.spyOn(JSON, 'parse');
    try {
      responses.readEvent(event({ type: 'response.created', sequence_number: 0, response }, 'response.created'));
      responses.readEvent(event({ type: 'response.in_progress', sequence_number: 1, response }, 'response.in_progress'));
      expect(parse).not.toHaveBeenCalled();
    } finally {
      parse.mockRestore();
    }
    expect(responses.errorCode()).toBeNull();

    responses.readEvent(event({ type: 'error', code: 'server_error', message: 'overloaded', sequence_number: 2 }, 'error'));
    expect(responses.errorCode()).toBe('upstream_error_in_stream');
  });

  it('read a chat chunk in which any usage member has a value, a null one before it or not', () => {
    const chat = new ChatMeter(true);
    chat.readEvent(event({ x: { usage: null }, choices: [], usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 } }));

    expect(chat.figures()).toMatchObject({ input_tokens: 5, output_tokens: 1 });
  });

  it('report the error event of a responses stream', () => {
    const responses = new ResponsesMeter();
    responses.readEvent(event({ type: 'response.output_text.delta', delta: 'hi', sequence_number: 3 }, 'response.output_text.delta'));
    responses.readEvent(event({ type: 'error', code: 'server_error', message: 'boom', sequence_number: 4 }, 'error'));

    expect(responses.errorCode()).toBe('upstream_error_in_stream');
  });
});

describe('MessagesMeter cache writes by duration', () => {
  const event = (data: unknown, name: string) => Buffer.from(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
  const split = (fiveMinutes: number, oneHour: number) => ({ ephemeral_5m_input_tokens: fiveMinutes, ephemeral_1h_input_tokens: oneHour });

  it('reads the split of a JSON answer beside the cache-write total', () => {
    const meter = new MessagesMeter();
    const usage = { input_tokens: 10, cache_read_input_tokens: 100, cache_creation_input_tokens: 3000, cache_creation: split(1000, 2000), output_tokens: 50 };
    meter.readJson(Buffer.from(JSON.stringify({ type: 'message', usage })));

    expect(meter.figures()).toStrictEqual({
      input_tokens: 3110,
      cached_input_tokens: 100,
      cache_write_input_tokens: 3000,
      cache_write_5m_input_tokens: 1000,
      cache_write_1h_input_tokens: 2000,
      output_tokens: 50,
    });
  });

  it('keeps the split of message_start when message_delta repeats only the totals, as the API streams it', () => {
    const meter = new MessagesMeter();
    const start = { input_tokens: 10, cache_read_input_tokens: 0, cache_creation_input_tokens: 300, cache_creation: split(100, 200), output_tokens: 1 };
    meter.readEvent(event({ type: 'message_start', message: { usage: start } }, 'message_start'));
    meter.readEvent(
      event({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { ...start, cache_creation: undefined, output_tokens: 42 } }, 'message_delta'),
    );

    expect(meter.figures()).toMatchObject({
      cache_write_input_tokens: 300,
      cache_write_5m_input_tokens: 100,
      cache_write_1h_input_tokens: 200,
      output_tokens: 42,
    });
  });

  it('takes the cumulative split of message_delta over the one of message_start', () => {
    const meter = new MessagesMeter();
    const start = { input_tokens: 10, cache_creation_input_tokens: 300, cache_creation: split(100, 200), output_tokens: 1 };
    meter.readEvent(event({ type: 'message_start', message: { usage: start } }, 'message_start'));
    const delta = { input_tokens: 10, cache_creation_input_tokens: 500, cache_creation: split(100, 400), output_tokens: 42 };
    meter.readEvent(event({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: delta }, 'message_delta'));

    expect(meter.figures()).toStrictEqual({
      input_tokens: 510,
      cache_write_input_tokens: 500,
      cache_write_5m_input_tokens: 100,
      cache_write_1h_input_tokens: 400,
      output_tokens: 42,
    });
  });

  it('overwrites only the durations a message_delta names, a null one overwriting nothing', () => {
    const meter = new MessagesMeter();
    meter.readEvent(
      event(
        { type: 'message_start', message: { usage: { input_tokens: 1, cache_creation_input_tokens: 30, cache_creation: split(10, 20) } } },
        'message_start',
      ),
    );
    const delta = { cache_creation_input_tokens: 36, cache_creation: { ephemeral_5m_input_tokens: null, ephemeral_1h_input_tokens: 26 }, output_tokens: 5 };
    meter.readEvent(event({ type: 'message_delta', delta: {}, usage: delta }, 'message_delta'));

    expect(meter.figures()).toMatchObject({ cache_write_input_tokens: 36, cache_write_5m_input_tokens: 10, cache_write_1h_input_tokens: 26 });
  });
});
