import { parsedJson, VENDOR_B_WIRE, VENDOR_C_WIRE, withGatewayId, wireOf } from './video-wire';

describe('video wires', () => {
  describe('paths', () => {
    it('puts vendor-c tasks under /v2', () => {
      expect(VENDOR_C_WIRE.interface).toBe('video_c');
      expect(VENDOR_C_WIRE.submitPath).toBe('/v2/video_generation');
      expect(VENDOR_C_WIRE.queryPath('up-123')).toBe('/v2/query/video_generation/up-123');
      expect(VENDOR_C_WIRE.cancelPath('up-123')).toBe('/v2/video_generation/up-123');
    });

    it('puts vendor-b tasks under /api/v3/contents/generations/tasks', () => {
      expect(VENDOR_B_WIRE.interface).toBe('video_b');
      expect(VENDOR_B_WIRE.submitPath).toBe('/api/v3/contents/generations/tasks');
      expect(VENDOR_B_WIRE.queryPath('cgt-42')).toBe('/api/v3/contents/generations/tasks/cgt-42');
      expect(VENDOR_B_WIRE.cancelPath('cgt-42')).toBe('/api/v3/contents/generations/tasks/cgt-42');
    });

    it.each([
      { wire: VENDOR_C_WIRE, query: '/v2/query/video_generation/a%2Fb%3Fc%3Dd%20e%23f', cancel: '/v2/video_generation/a%2Fb%3Fc%3Dd%20e%23f' },
      {
        wire: VENDOR_B_WIRE,
        query: '/api/v3/contents/generations/tasks/a%2Fb%3Fc%3Dd%20e%23f',
        cancel: '/api/v3/contents/generations/tasks/a%2Fb%3Fc%3Dd%20e%23f',
      },
    ])('URL-encodes ids in query and cancel paths of $wire.interface', ({ wire, query, cancel }) => {
      expect(wire.queryPath('a/b?c=d e#f')).toBe(query);
      expect(wire.cancelPath('a/b?c=d e#f')).toBe(cancel);
    });

    it('encodes an id that tries to climb out of the path', () => {
      expect(VENDOR_B_WIRE.queryPath('../../admin')).toBe('/api/v3/contents/generations/tasks/..%2F..%2Fadmin');
    });

    it('picks the wire for each interface', () => {
      expect(wireOf('video_b')).toBe(VENDOR_B_WIRE);
      expect(wireOf('video_c')).toBe(VENDOR_C_WIRE);
    });
  });

  describe('submittedId', () => {
    it('reads task_id on vendor-c', () => {
      expect(VENDOR_C_WIRE.submittedId({ task_id: 'up-123' })).toBe('up-123');
    });

    it('reads id on vendor-b', () => {
      expect(VENDOR_B_WIRE.submittedId({ id: 'cgt-42' })).toBe('cgt-42');
    });

    it('does not read the other vendor’s member', () => {
      expect(VENDOR_C_WIRE.submittedId({ id: 'cgt-42' })).toBeUndefined();
      expect(VENDOR_B_WIRE.submittedId({ task_id: 'up-123' })).toBeUndefined();
    });

    it.each([
      ['absent', {}],
      ['null', { task_id: null, id: null }],
      ['numeric', { task_id: 123, id: 123 }],
      ['an object', { task_id: { value: 'x' }, id: { value: 'x' } }],
      ['empty', { task_id: '', id: '' }],
    ])('is undefined when the id is %s', (_label, answer) => {
      expect(VENDOR_C_WIRE.submittedId(answer)).toBeUndefined();
      expect(VENDOR_B_WIRE.submittedId(answer)).toBeUndefined();
    });

    it.each([
      ['undefined', undefined],
      ['null', null],
      ['a string', 'up-123'],
      ['a number', 5],
    ])('is undefined when the answer is %s', (_label, answer) => {
      expect(VENDOR_C_WIRE.submittedId(answer)).toBeUndefined();
      expect(VENDOR_B_WIRE.submittedId(answer)).toBeUndefined();
    });
  });

  describe('reported, vendor-c', () => {
    it('reads status, duration, resolution and usage figures from task', () => {
      const answer = {
        task: {
          id: 'up-123',
          status: 'succeeded',
          content: { url: 'https://cdn.example.com/v.mp4' },
          duration: 6,
          resolution: '1080p',
          usage: { output_seconds: 6, input_seconds: 4, input_image_count: 2 },
        },
      };
      expect(VENDOR_C_WIRE.reported(answer)).toEqual({
        status: 'succeeded',
        durationSeconds: 6,
        resolution: '1080p',
        figures: { output_seconds: 6, input_seconds: 4, input_image_count: 2 },
      });
    });

    it('keeps figures of 0', () => {
      const answer = { task: { status: 'succeeded', usage: { output_seconds: 5, input_seconds: 0, input_image_count: 0 } } };
      expect(VENDOR_C_WIRE.reported(answer).figures).toEqual({ output_seconds: 5, input_seconds: 0, input_image_count: 0 });
    });

    it('reports only the figures the answer names', () => {
      const answer = { task: { status: 'succeeded', usage: { output_seconds: 5 } } };
      const figures = VENDOR_C_WIRE.reported(answer).figures;
      expect(figures).toEqual({ output_seconds: 5 });
      expect(figures).not.toHaveProperty('input_seconds');
      expect(figures).not.toHaveProperty('input_image_count');
    });

    it('has undefined figures when the task has no usage', () => {
      const reported = VENDOR_C_WIRE.reported({ task: { status: 'running', duration: 5 } });
      expect(reported.status).toBe('running');
      expect(reported.durationSeconds).toBe(5);
      expect(reported.figures).toBeUndefined();
    });

    it('has undefined figures when usage is empty or null', () => {
      expect(VENDOR_C_WIRE.reported({ task: { status: 'succeeded', usage: {} } }).figures).toBeUndefined();
      expect(VENDOR_C_WIRE.reported({ task: { status: 'succeeded', usage: null } }).figures).toBeUndefined();
    });

    it('ignores negative and non-numeric usage', () => {
      const answer = { task: { status: 'succeeded', usage: { output_seconds: -1, input_seconds: '4', input_image_count: null } } };
      expect(VENDOR_C_WIRE.reported(answer).figures).toBeUndefined();
    });

    it('keeps the valid figures next to ignored ones', () => {
      const answer = { task: { usage: { output_seconds: 5, input_seconds: -3, input_image_count: 'two' } } };
      expect(VENDOR_C_WIRE.reported(answer).figures).toEqual({ output_seconds: 5 });
    });

    it('ignores a negative, non-numeric or empty duration, status and resolution', () => {
      const reported = VENDOR_C_WIRE.reported({ task: { status: '', duration: -5, resolution: 1080 } });
      expect(reported).toEqual({ status: undefined, durationSeconds: undefined, resolution: undefined, figures: undefined });
      expect(VENDOR_C_WIRE.reported({ task: { duration: '5' } }).durationSeconds).toBeUndefined();
    });

    it('does not read vendor-b fields at the top level', () => {
      const reported = VENDOR_C_WIRE.reported({ status: 'succeeded', duration: 5, usage: { output_seconds: 5 } });
      expect(reported).toEqual({ status: undefined, durationSeconds: undefined, resolution: undefined, figures: undefined });
    });

    it.each([
      ['undefined', undefined],
      ['null', null],
      ['a string', 'oops'],
      ['a task that is not an object', { task: 'oops' }],
    ])('reports nothing for an answer that is %s', (_label, answer) => {
      expect(VENDOR_C_WIRE.reported(answer)).toEqual({ status: undefined, durationSeconds: undefined, resolution: undefined, figures: undefined });
    });
  });

  describe('reported, vendor-b', () => {
    it('reads status, duration and resolution at the top level and output tokens from usage.completion_tokens', () => {
      const answer = {
        id: 'cgt-42',
        model: 'video-b-pro',
        status: 'succeeded',
        content: { video_url: 'https://cdn.example.com/v.mp4' },
        duration: 5,
        resolution: '720p',
        usage: { completion_tokens: 108000, total_tokens: 108000 },
      };
      expect(VENDOR_B_WIRE.reported(answer)).toEqual({
        status: 'succeeded',
        durationSeconds: 5,
        resolution: '720p',
        figures: { output_video_tokens: 108000 },
      });
    });

    it('uses completion_tokens, not total_tokens', () => {
      const answer = { status: 'succeeded', usage: { completion_tokens: 100, total_tokens: 250 } };
      expect(VENDOR_B_WIRE.reported(answer).figures).toEqual({ output_video_tokens: 100 });
    });

    it('keeps output tokens of 0', () => {
      expect(VENDOR_B_WIRE.reported({ status: 'succeeded', usage: { completion_tokens: 0 } }).figures).toEqual({ output_video_tokens: 0 });
    });

    it('has undefined figures when there is no usage', () => {
      const reported = VENDOR_B_WIRE.reported({ status: 'queued' });
      expect(reported.status).toBe('queued');
      expect(reported.figures).toBeUndefined();
    });

    it('has undefined figures when usage lacks completion_tokens', () => {
      expect(VENDOR_B_WIRE.reported({ status: 'succeeded', usage: { total_tokens: 100 } }).figures).toBeUndefined();
    });

    it.each([
      ['negative', -10],
      ['a string', '100'],
      ['null', null],
      ['NaN-like object', { value: 100 }],
    ])('ignores completion_tokens that is %s', (_label, completion_tokens) => {
      expect(VENDOR_B_WIRE.reported({ status: 'succeeded', usage: { completion_tokens } }).figures).toBeUndefined();
    });

    it('does not read a vendor-c task wrapper', () => {
      const reported = VENDOR_B_WIRE.reported({ task: { status: 'succeeded', duration: 5, usage: { completion_tokens: 10 } } });
      expect(reported).toEqual({ status: undefined, durationSeconds: undefined, resolution: undefined, figures: undefined });
    });

    it.each([
      ['undefined', undefined],
      ['null', null],
      ['a number', 3],
    ])('reports nothing for an answer that is %s', (_label, answer) => {
      expect(VENDOR_B_WIRE.reported(answer)).toEqual({ status: undefined, durationSeconds: undefined, resolution: undefined, figures: undefined });
    });
  });
});

describe(withGatewayId.name, () => {
  const UPSTREAM = 'cgt-20250101-abc';
  const GATEWAY = 'vt_9f8e7d6c';

  function rewritten(value: unknown): unknown {
    return parsedJson(withGatewayId(Buffer.from(JSON.stringify(value)), UPSTREAM, GATEWAY));
  }

  it('replaces the top-level id of a vendor-b task', () => {
    expect(rewritten({ id: UPSTREAM, status: 'running' })).toEqual({ id: GATEWAY, status: 'running' });
  });

  it('replaces the nested id of a vendor-c task and keeps the rest', () => {
    const answer = { task: { id: UPSTREAM, status: 'succeeded', duration: 5, usage: { output_seconds: 5 } } };
    expect(rewritten(answer)).toEqual({ task: { id: GATEWAY, status: 'succeeded', duration: 5, usage: { output_seconds: 5 } } });
  });

  it('replaces exact string values anywhere in nested objects and arrays', () => {
    const answer = {
      task_id: UPSTREAM,
      deep: { deeper: { list: [1, UPSTREAM, { ref: UPSTREAM }, [UPSTREAM]] } },
      related: [{ id: 'other-task' }, { id: UPSTREAM }],
    };
    expect(rewritten(answer)).toEqual({
      task_id: GATEWAY,
      deep: { deeper: { list: [1, GATEWAY, { ref: GATEWAY }, [GATEWAY]] } },
      related: [{ id: 'other-task' }, { id: GATEWAY }],
    });
  });

  it('replaces the id inside messages, every time it occurs', () => {
    const answer = { id: UPSTREAM, error: { code: 'Failed', message: `task ${UPSTREAM} failed; retry ${UPSTREAM} later` } };
    expect(rewritten(answer)).toEqual({ id: GATEWAY, error: { code: 'Failed', message: `task ${GATEWAY} failed; retry ${GATEWAY} later` } });
  });

  it('leaves http and https result addresses untouched even when they contain the id', () => {
    const https = `https://cdn.example.com/videos/${UPSTREAM}.mp4?X-Signature=${UPSTREAM}`;
    const http = `HTTP://cdn.example.com/${UPSTREAM}/v.mp4`;
    const answer = { task: { id: UPSTREAM, content: { url: https, last_frame_url: http } } };
    expect(rewritten(answer)).toEqual({ task: { id: GATEWAY, content: { url: https, last_frame_url: http } } });
  });

  it('still replaces the id in non-address strings that merely mention a URL later', () => {
    const message = `task ${UPSTREAM}: see https://status.example.com`;
    expect(rewritten({ message })).toEqual({ message: `task ${GATEWAY}: see https://status.example.com` });
  });

  it('replaces the id in object keys too: it never reaches the client', () => {
    expect(rewritten({ [UPSTREAM]: UPSTREAM })).toEqual({ [GATEWAY]: GATEWAY });
  });

  it('keeps every other byte: spacing, decimals and integers beyond 2^53', () => {
    const body = Buffer.from(`{ "id" : "${UPSTREAM}",\n  "n": 1.50, "seed": 9007199254740993, "msg": "say \\"${UPSTREAM}\\"" }`);
    const result = withGatewayId(body, UPSTREAM, GATEWAY).toString('utf8');
    expect(result).toBe(`{ "id" : "${GATEWAY}",\n  "n": 1.50, "seed": 9007199254740993, "msg": "say \\"${GATEWAY}\\"" }`);
  });

  it('leaves numbers, booleans and null as they are', () => {
    expect(rewritten({ id: UPSTREAM, n: 3, ok: true, nothing: null })).toEqual({ id: GATEWAY, n: 3, ok: true, nothing: null });
  });

  it('returns the very same bytes when the id does not occur', () => {
    const body = Buffer.from('{ "id" : "other",\n  "n": 1.50, "big": 12345678901234567890 }');
    const result = withGatewayId(body, UPSTREAM, GATEWAY);
    expect(result.equals(body)).toBe(true);
  });

  it('replaces the id in a body that is not JSON, as text', () => {
    const body = Buffer.from(`upstream error: task ${UPSTREAM} not found (${UPSTREAM})`);
    expect(withGatewayId(body, UPSTREAM, GATEWAY).toString('utf8')).toBe(`upstream error: task ${GATEWAY} not found (${GATEWAY})`);
  });

  it('leaves a non-JSON body without the id byte-identical', () => {
    const body = Buffer.from('<html>Bad Gateway</html>');
    expect(withGatewayId(body, UPSTREAM, GATEWAY).equals(body)).toBe(true);
  });

  it('replaces the id in a JSON string body', () => {
    expect(rewritten(UPSTREAM)).toBe(GATEWAY);
  });

  it('gives back valid JSON for a JSON body', () => {
    const result = withGatewayId(Buffer.from(JSON.stringify({ id: UPSTREAM })), UPSTREAM, GATEWAY);
    expect(() => JSON.parse(result.toString('utf8'))).not.toThrow();
  });
});

describe(parsedJson.name, () => {
  it('parses JSON and gives undefined for anything else', () => {
    expect(parsedJson(Buffer.from('{"a":[1]}'))).toEqual({ a: [1] });
    expect(parsedJson(Buffer.from('not json'))).toBeUndefined();
    expect(parsedJson(Buffer.alloc(0))).toBeUndefined();
  });
});
