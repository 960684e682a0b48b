import { usageDraft } from '../../test/support/usage-draft';
import { draftOfLine, USAGE_COLUMNS, usageLine, UsagePage, UsageQueue } from './usage-lines';

const draft = usageDraft;

describe(usageLine.name, () => {
  it('writes the fields in column order, tab-separated, NULL as \\N, booleans as t/f, the line ended', () => {
    expect(usageLine(draft())).toBe(
      'req-1\t\\N\t6a1c0d2e-4b5f-4c3a-9d8e-7f6a5b4c3d2e\tteam-a\tchat-model\tchat_completions\tline-a\t\\N\t200\t\\N\tf\t' +
        '{"input_tokens":12,"output_tokens":7}\t1500\t2026-11-26T01:02:03.004Z\t15\t9\t\\N\t\\N\t\\N\t\\N\t\\N\n',
    );
    const line = usageLine(draft({ usage: undefined, upstreamHeadersMs: null, stream: true, line: null }));
    expect(line.split('\t')).toHaveLength(USAGE_COLUMNS.length);
    expect(line).toContain('\tt\t\\N\t1500\t');
    expect(line.endsWith('\t15\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\n')).toBe(true);
  });

  it('writes tags as a text[] literal with every element quoted (a tag spelled NULL stays text), none as NULL', () => {
    const line = usageLine(draft({ tags: ['app:search', 'NULL', 'env.prod_1-a'], endUser: 'user-42' }));
    expect(line.endsWith('\t{"app:search","NULL","env.prod_1-a"}\tuser-42\t\\N\t\\N\t\\N\n')).toBe(true);
    expect(usageLine(draft({ tags: [] })).endsWith('\t\\N\t\\N\t\\N\t\\N\t\\N\n')).toBe(true);
  });

  it('writes the lines of a call of several attempts as a text[] literal, one attempt as NULL', () => {
    expect(usageLine(draft({ linesTried: ['line-a', 'line-b', 'line-b'] })).endsWith('\t{"line-a","line-b","line-b"}\t\\N\t\\N\n')).toBe(true);
  });

  it('writes the price sheet as text and the basis as JSON, none as NULL', () => {
    const line = usageLine(draft({ priceSheet: '0123456789abcdef0123456789abcdef', priceBasis: { resolution: '720p', video_input: false } }));
    expect(line.endsWith('\t0123456789abcdef0123456789abcdef\t{"resolution":"720p","video_input":false}\n')).toBe(true);
  });

  it('escapes the characters COPY gives a meaning, in every text field', () => {
    const line = usageLine(draft({ clientRequestId: 'tab\there', model: 'back\\slash\nnew\rline' }));
    expect(line).toContain('\ttab\\there\t');
    expect(line).toContain('\tback\\\\slash\\nnew\\rline\t');
    expect(line.split('\n')).toEqual([expect.any(String), '']);
  });
});

describe(draftOfLine.name, () => {
  it('gives back the record a line was made of, odd characters, NULLs and an empty text included', () => {
    const records = [
      draft(),
      draft({
        clientRequestId: 'back\\slash \\N tab\tline\nreturn\r end "quoted" {braces}',
        model: 'NULL ünïcode 模型 😀',
        line: '',
        translatedTo: 'messages',
        errorCode: 'upstream_stream_broken',
        stream: true,
        usage: undefined,
        costNano: 9_007_199_254_740_993n,
        upstreamHeadersMs: null,
      }),
      draft({ tags: ['app:search', 'env:prod', 'NULL'], endUser: 'user \\ "42"\ttab\nline 用户 😀' }),
      // Not a tag a call can carry, but the literal quotes and escapes whatever it is given.
      draft({ tags: ['quote " back \\ comma , brace } tab \t'], endUser: '\\N' }),
      draft({ linesTried: ['line-a', 'line-"b"', 'line-a'] }),
      draft({ priceSheet: '0123456789abcdef0123456789abcdef', priceBasis: { output_pixels: [1_048_576, null] } }),
      draft({ priceSheet: 'fedcba9876543210fedcba9876543210', priceBasis: { resolution: '1080p\t"hd"', video_input: true } }),
    ];
    for (const record of records) expect(draftOfLine(usageLine(record))).toEqual(record);
  });

  it('refuses a line with the wrong number of fields', () => {
    expect(() => draftOfLine('a\tb\n')).toThrow('a usage line has 2 fields, not 21');
  });
});

describe(UsagePage.name, () => {
  it('keeps the lines as bytes, growing past its first buffer, each line read back as written', () => {
    const page = new UsagePage(Buffer.allocUnsafe(256));
    const records = Array.from({ length: 300 }, (_, index) =>
      draft({ requestId: `req-${index}`, model: `模型-${'m'.repeat(index % 90)}`, costNano: BigInt(index) }),
    );
    for (const record of records) page.add(usageLine(record), record);

    expect(page.count).toBe(300);
    expect(page.content().toString()).toBe(records.map(usageLine).join(''));
    for (let index = 0; index < records.length; index++) expect(draftOfLine(page.line(index))).toEqual(records[index]);
    expect(page.costs).toEqual(new Map([['team-a', BigInt((299 * 300) / 2)]]));
  });

  it('sums the cost per owner and takes a dropped first line off the content and the sums', () => {
    const page = new UsagePage();
    const records = [
      draft({ requestId: 'a', costNano: 5n }),
      draft({ requestId: 'b', ownerId: 'team-b', costNano: 7n }),
      draft({ requestId: 'c', costNano: 11n }),
    ];
    for (const record of records) page.add(usageLine(record), record);
    expect(page.costs).toEqual(
      new Map([
        ['team-a', 16n],
        ['team-b', 7n],
      ]),
    );

    page.dropFirst();

    expect(page.count).toBe(2);
    expect(page.content().toString()).toBe(usageLine(records[1]) + usageLine(records[2]));
    expect(page.line(0)).toBe(usageLine(records[1]));
    expect(page.costs).toEqual(
      new Map([
        ['team-a', 11n],
        ['team-b', 7n],
      ]),
    );
    expect(page.find('a')).toBeUndefined();
    expect(page.find('c')).toBe(usageLine(records[2]));
  });

  it('finds a line by its request id only, not by the same text in another field or as a prefix', () => {
    const page = new UsagePage();
    const first = draft({ requestId: 'req-10', clientRequestId: 'req-2' });
    const second = draft({ requestId: 'req-2', model: 'req-1' });
    const odd = draft({ requestId: 'tab\tid' });
    for (const record of [first, second, odd]) page.add(usageLine(record), record);

    expect(page.find('req-2')).toBe(usageLine(second));
    expect(page.find('req-10')).toBe(usageLine(first));
    expect(page.find('req-1')).toBeUndefined();
    expect(page.find('tab\tid')).toBe(usageLine(odd));
  });
});

describe(UsageQueue.name, () => {
  it('fills pages up to the batch size and counts what waits', () => {
    const queue = new UsageQueue(2);
    for (const id of ['a', 'b', 'c']) queue.add(draft({ requestId: id }));
    expect(queue.depth).toBe(3);
    expect(queue.next()!.count).toBe(2);

    queue.dropNext();
    expect(queue.depth).toBe(1);
    expect(queue.find('a')).toBeUndefined();
    expect([...queue.lines()].map((line) => draftOfLine(line).requestId)).toEqual(['c']);

    // The written page's buffer serves a new page: what it held before is not read again.
    for (const id of ['d', 'e', 'f']) queue.add(draft({ requestId: id, model: 'x' }));
    expect([...queue.lines()].map((line) => draftOfLine(line).requestId)).toEqual(['c', 'd', 'e', 'f']);
    queue.dropNext();
    expect(queue.next()!.content().toString()).toBe(usageLine(draft({ requestId: 'e', model: 'x' })) + usageLine(draft({ requestId: 'f', model: 'x' })));
    expect(queue.find('a')).toBeUndefined();
  });

  it('leaves a page taken for a write as it is: a record that comes meanwhile waits behind it', () => {
    const queue = new UsageQueue(5);
    for (const id of ['a', 'b']) queue.add(draft({ requestId: id }));

    const batch = queue.next()!;
    queue.add(draft({ requestId: 'c' }));

    expect(batch.count).toBe(2);
    expect(queue.depth).toBe(3);
    expect([...queue.lines()].map((line) => draftOfLine(line).requestId)).toEqual(['a', 'b', 'c']);
    expect(draftOfLine(queue.find('c')!).requestId).toBe('c');
    queue.dropFirstLine();
    queue.dropFirstLine();
    expect(queue.depth).toBe(1);
    expect(queue.next()!.line(0)).toBe(queue.find('c'));
    queue.dropNext();
    expect(queue.depth).toBe(0);
    expect(queue.next()).toBeUndefined();
  });
});
