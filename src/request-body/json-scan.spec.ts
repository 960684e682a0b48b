import { randomBytes } from 'node:crypto';
import { MAX_JSON_DEPTH, scanTopLevel, type ScanResult, type TopLevelField } from './json-scan';
import { readValue, spliceFields } from './json-splice';

function scan(text: string): ScanResult {
  return scanTopLevel(Buffer.from(text));
}

function fieldsOf(text: string): Map<string, TopLevelField> {
  const result = scan(text);
  if (!result.ok) throw new Error(`expected a valid object, got ${result.reason}: ${result.message}`);
  return result.fields;
}

function valueText(text: string, key: string): string {
  const field = fieldsOf(text).get(key);
  if (field === undefined) throw new Error(`no field ${key}`);
  return Buffer.from(text).toString('utf8', field.valueStart, field.valueEnd);
}

describe(scanTopLevel.name, () => {
  it('records every top-level member with byte ranges of its key and value', () => {
    const text = '{"model":"gpt","stream":true,"n":2}';
    const fields = fieldsOf(text);
    expect([...fields.keys()]).toEqual(['model', 'stream', 'n']);
    expect(fields.get('model')).toEqual({ key: 'model', keyStart: 1, valueStart: 9, valueEnd: 14 });
    expect(valueText(text, 'stream')).toBe('true');
    expect(valueText(text, 'n')).toBe('2');
  });

  it('accepts an empty object', () => {
    expect(fieldsOf('{}').size).toBe(0);
    expect(fieldsOf(' \n{ \t}\r\n').size).toBe(0);
  });

  it('accepts whitespace everywhere the grammar allows it', () => {
    const text = ' \r\n\t{ \n"model" \t: \r\n "x" \n, "list" : [ 1 , { "a" : null } , [ ] ] , "o":{ } }\n ';
    expect(valueText(text, 'model')).toBe('"x"');
    expect(valueText(text, 'list')).toBe('[ 1 , { "a" : null } , [ ] ]');
    expect(valueText(text, 'o')).toBe('{ }');
  });

  it('allows repeated keys below the top level', () => {
    const text = '{"messages":[{"role":"user","role":"system"}],"meta":{"a":1,"a":2}}';
    expect([...fieldsOf(text).keys()]).toEqual(['messages', 'meta']);
  });

  it('ends a string at a quote preceded by an even run of backslashes', () => {
    const text = String.raw`{"a":"x\\\\","b":"y\\\"z","c":"\\"}`;
    expect(valueText(text, 'a')).toBe(String.raw`"x\\\\"`);
    expect(valueText(text, 'b')).toBe(String.raw`"y\\\"z"`);
    expect(valueText(text, 'c')).toBe(String.raw`"\\"`);
  });

  it('skips escaped quotes and braces inside strings', () => {
    const text = String.raw`{"a":"}\"{,:[","b":1}`;
    expect(valueText(text, 'a')).toBe(String.raw`"}\"{,:["`);
    expect(valueText(text, 'b')).toBe('1');
  });

  it('accepts every escape of the grammar', () => {
    expect(fieldsOf(String.raw`{"a":"\" \\ \/ \b \f \n \r \t \u00e9 \uD83D\uDE00 \uABcd"}`).size).toBe(1);
  });

  it('decodes escaped and unicode keys', () => {
    const fields = fieldsOf('{"mod\\u0065l":1,"ключ":2,"😀":3,"a\\"b":4}');
    expect([...fields.keys()]).toEqual(['model', 'ключ', '😀', 'a"b']);
  });

  it('gives byte offsets, not character offsets, after multi-byte characters', () => {
    const text = '{"é😀":"ключ","model":"m"}';
    const body = Buffer.from(text);
    const field = fieldsOf(text).get('model') as TopLevelField;
    expect(body.toString('utf8', field.valueStart, field.valueEnd)).toBe('"m"');
  });

  it('accepts every form of number of the grammar', () => {
    const text = '{"a":[0,-0,1,-12,3.25,-0.5,1e9,1E+9,2e-3,-1.5E-07,10]}';
    expect(valueText(text, 'a')).toBe('[0,-0,1,-12,3.25,-0.5,1e9,1E+9,2e-3,-1.5E-07,10]');
  });

  it(`accepts nesting up to ${MAX_JSON_DEPTH} levels`, () => {
    const inner = MAX_JSON_DEPTH - 1;
    expect(fieldsOf(`{"a":${'['.repeat(inner)}${']'.repeat(inner)}}`).size).toBe(1);
  });

  it('reports a repeated top-level key by its decoded name', () => {
    expect(scan('{"model":1,"mod\\u0065l":2}')).toEqual({
      ok: false,
      reason: 'duplicate_key',
      key: 'model',
      message: 'Request body repeats the top-level field "model".',
    });
  });

  it('prefers not_json over duplicate_key when the document is also broken', () => {
    expect(scan('{"a":1,"a":2,}')).toMatchObject({ ok: false, reason: 'not_json' });
  });

  it.each([
    ['an array', '[{"model":"x"}]'],
    ['a string', '"model"'],
    ['a number', '42'],
    ['a literal', 'null'],
    ['an empty array', ' [] '],
  ])('refuses %s at the top level as not_object', (_label, text) => {
    expect(scan(text)).toEqual({ ok: false, reason: 'not_object', message: 'Request body must be a JSON object.' });
  });

  it.each([
    ['an empty body', ''],
    ['a whitespace-only body', ' \n\t '],
    ['a missing closing brace', '{"a":1'],
    ['a missing value', '{"a":}'],
    ['a missing colon', '{"a" 1}'],
    ['a trailing comma in an object', '{"a":1,}'],
    ['a trailing comma in an array', '{"a":[1,]}'],
    ['a missing comma', '{"a":1 "b":2}'],
    ['an unquoted key', '{a:1}'],
    ['a single-quoted string', "{'a':1}"],
    ['a non-string key', '{1:1}'],
    ['an unterminated string', '{"a":"abc}'],
    ['an unterminated key', '{"abc'],
    ['a string ending in a backslash', '{"a":"abc\\'],
    ['an invalid escape', '{"a":"\\x41"}'],
    ['a short unicode escape', '{"a":"\\u12"}'],
    ['a non-hex unicode escape', '{"a":"\\u12G4"}'],
    ['a raw line feed in a string', '{"a":"line\nbreak"}'],
    ['a raw tab in a key', '{"a\tb":1}'],
    ['a raw NUL in a long string', `{"a":"${'x'.repeat(200)}\u0000${'y'.repeat(200)}"}`],
    ['a leading zero', '{"a":01}'],
    ['a bare minus', '{"a":-}'],
    ['a leading plus', '{"a":+1}'],
    ['a leading dot', '{"a":.5}'],
    ['a trailing dot', '{"a":1.}'],
    ['an empty exponent', '{"a":1e}'],
    ['an exponent sign without digits', '{"a":1e+}'],
    ['hexadecimal', '{"a":0x10}'],
    ['NaN', '{"a":NaN}'],
    ['Infinity', '{"a":Infinity}'],
    ['a misspelled literal', '{"a":tru}'],
    ['a capitalised literal', '{"a":True}'],
    ['a literal with trailing letters', '{"a":nullx}'],
    ['a comment', '{"a":1 /* no */}'],
    ['trailing garbage', '{"a":1} x'],
    ['a second document', '{"a":1}{"b":2}'],
    ['a byte order mark', '\ufeff{"a":1}'],
    ['an unclosed array', '{"a":[1,2}'],
    ['a mismatched bracket', '{"a":[1,2}]'],
    ['an invalid top-level array', '[1,'],
    ['nesting deeper than the limit', `{"a":${'['.repeat(MAX_JSON_DEPTH)}${']'.repeat(MAX_JSON_DEPTH)}}`],
  ])('refuses %s as not_json', (_label, text) => {
    const result = scan(text);
    expect(result).toMatchObject({ ok: false, reason: 'not_json' });
    expect(result.ok === false && result.message).toMatch(/^Request body is not valid JSON: .+\.$/);
  });

  it('names the offending character and its byte offset', () => {
    expect(scan('{"model":"x", x}')).toMatchObject({
      message: "Request body is not valid JSON: unexpected character 'x' at byte 14.",
    });
    expect(scan('{"a":"b\u0001"}')).toMatchObject({
      message: 'Request body is not valid JSON: unescaped control character 0x01 in a string at byte 7.',
    });
    expect(scan('{"a":')).toMatchObject({ message: 'Request body is not valid JSON: unexpected end of input at byte 5.' });
    expect(scan('')).toMatchObject({ message: 'Request body is not valid JSON: the body is empty.' });
    const deep = `{"a":${'['.repeat(MAX_JSON_DEPTH)}`;
    expect(scan(deep)).toMatchObject({ message: expect.stringContaining(`nesting deeper than ${MAX_JSON_DEPTH} levels`) });
  });

  it('finds a control character at every offset of a long string', () => {
    const clean = 'abcdefgh'.repeat(20);
    for (let offset = 0; offset < clean.length; offset++) {
      const text = `{"a":"${clean.slice(0, offset)}\u001f${clean.slice(offset)}"}`;
      expect(scan(text)).toMatchObject({ reason: 'not_json', message: expect.stringContaining(`at byte ${6 + offset}.`) });
    }
  });

  it('reads long strings with escapes spread through them', () => {
    const value = `${'a'.repeat(100)}"${'b'.repeat(70)}\\${'c'.repeat(40)}\n😀${'d'.repeat(200)}\u0001`;
    const text = `{"a":${JSON.stringify(value)},"b":${JSON.stringify('x'.repeat(33) + '\t')}}`;
    const body = Buffer.from(text);
    const fields = fieldsOf(text);
    expect(readValue(body, fields.get('a') as TopLevelField)).toBe(value);
    expect(readValue(body, fields.get('b') as TopLevelField)).toBe('x'.repeat(33) + '\t');
  });

  it('scans a body that is a slice of a larger, unaligned buffer', () => {
    const text = `{"a":"${'z'.repeat(300)}","model":"m"}`;
    for (let shift = 0; shift < 4; shift++) {
      const backing = Buffer.alloc(text.length + shift + 3, 0x01);
      backing.write(text, shift);
      const body = backing.subarray(shift, shift + text.length);
      const result = scanTopLevel(body);
      expect(result.ok && readValue(body, result.fields.get('model') as TopLevelField)).toBe('m');
    }
  });
});

describe('scanTopLevel on a 30 MiB base64 body', () => {
  const image = randomBytes(Math.floor((30 * 1024 * 1024 * 3) / 4)).toString('base64');
  const body = Buffer.from(`{"model":"vendor-image","prompt":"a cat","image":"data:image/png;base64,${image}","n":1}`);

  it('finds the members around the large string', () => {
    const result = scanTopLevel(body);
    if (!result.ok) throw new Error(result.message);
    expect([...result.fields.keys()]).toEqual(['model', 'prompt', 'image', 'n']);
    const field = result.fields.get('image') as TopLevelField;
    expect(field.valueEnd - field.valueStart).toBe(image.length + '"data:image/png;base64,"'.length);
    expect(readValue(body, result.fields.get('n') as TopLevelField)).toBe(1);
  });

  it('splices the model without touching the large string', () => {
    const result = scanTopLevel(body);
    if (!result.ok) throw new Error(result.message);
    const spliced = spliceFields(body, result.fields, new Map([['model', '"upstream-model"']]));
    const expected = Buffer.concat([Buffer.from('{"model":"upstream-model"'), body.subarray(body.indexOf(',"prompt"'))]);
    expect(spliced.equals(expected)).toBe(true);
  });
});

describe(readValue.name, () => {
  it('parses only the bytes of one member', () => {
    const text = '{"model":"m\\u00e9","stream":false,"options":{"a":[1,2]},"broken-elsewhere":null}';
    const body = Buffer.from(text);
    const fields = fieldsOf(text);
    expect(readValue<string>(body, fields.get('model') as TopLevelField)).toBe('mé');
    expect(readValue<boolean>(body, fields.get('stream') as TopLevelField)).toBe(false);
    expect(readValue(body, fields.get('options') as TopLevelField)).toEqual({ a: [1, 2] });
  });
});

describe(spliceFields.name, () => {
  function splice(text: string, replacements: Array<[string, string]>, additions?: Array<[string, string]>): string {
    const body = Buffer.from(text);
    return spliceFields(body, fieldsOf(text), new Map(replacements), additions).toString('utf8');
  }

  it('swaps the value bytes and keeps every other byte identical', () => {
    const text = ' {\n  "model" : "client-model" ,\n  "stream":true, "x": [1, 2]\n}\n';
    expect(splice(text, [['model', '"upstream-model"']])).toBe(' {\n  "model" : "upstream-model" ,\n  "stream":true, "x": [1, 2]\n}\n');
  });

  it('replaces several members whatever the order of the replacements', () => {
    const text = '{"a":1,"b":{"deep":true},"c":"three"}';
    expect(
      splice(text, [
        ['c', '3'],
        ['a', '"one"'],
      ]),
    ).toBe('{"a":"one","b":{"deep":true},"c":3}');
    expect(splice(text, [['b', 'null']])).toBe('{"a":1,"b":null,"c":"three"}');
  });

  it('appends additions after the last member', () => {
    expect(splice('{"a":1 }', [], [['stream_options', '{"include_usage":true}']])).toBe('{"a":1,"stream_options":{"include_usage":true} }');
    expect(
      splice(
        '{"a":1,"b":2}',
        [['b', '3']],
        [
          ['c', '4'],
          ['d', '5'],
        ],
      ),
    ).toBe('{"a":1,"b":3,"c":4,"d":5}');
  });

  it('appends additions to an empty object without a leading comma', () => {
    expect(
      splice(
        ' { } ',
        [],
        [
          ['a', '1'],
          ['b', '2'],
        ],
      ),
    ).toBe(' {"a":1,"b":2 } ');
  });

  it('escapes added keys', () => {
    expect(JSON.parse(splice('{}', [], [['we"ird', 'true']]))).toEqual({ 'we"ird': true });
  });

  it('produces a body that scans and parses to the expected object', () => {
    const text = '{"model":"a","messages":[{"role":"user","content":"hé \\"quoted\\""}]}';
    const spliced = splice(text, [['model', '"b"']], [['stream', 'true']]);
    expect(scan(spliced).ok).toBe(true);
    expect(JSON.parse(spliced)).toEqual({ ...JSON.parse(text), model: 'b', stream: true });
  });

  it('refuses to replace a member the body does not have, or to add one it has', () => {
    expect(() => splice('{"a":1}', [['b', '2']])).toThrow(RangeError);
    expect(() => splice('{"a":1}', [], [['a', '2']])).toThrow(RangeError);
  });

  it('returns an identical copy when there is nothing to change', () => {
    const text = '{"a":1}';
    expect(splice(text, [])).toBe(text);
  });
});
