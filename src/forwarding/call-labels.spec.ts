import { GatewayError } from '../common/gateway-error';
import { scanTopLevel, type TopLevelField } from '../request-body/json-scan';
import { parseForm } from '../request-body/multipart-form';
import { endUserOf, endUserOfForm, endUserText, tagsOf } from './call-labels';

/** The 400 a header is refused with; fails when it is accepted. */
function refusal(header: string): GatewayError {
  try {
    tagsOf(header);
  } catch (error) {
    expect(error).toBeInstanceOf(GatewayError);
    expect((error as GatewayError).code).toBe('invalid_request');
    return error as GatewayError;
  }
  throw new Error(`the header ${JSON.stringify(header)} was accepted`);
}

function scanned(json: string): { body: Buffer; fields: Map<string, TopLevelField> } {
  const body = Buffer.from(json);
  const scan = scanTopLevel(body);
  if (!scan.ok) throw new Error(scan.message);
  return { body, fields: scan.fields };
}

describe(tagsOf.name, () => {
  it('reads comma-separated tags in order, spaces around them trimmed, a repeat kept once', () => {
    expect(tagsOf('app:search,env:prod')).toEqual(['app:search', 'env:prod']);
    expect(tagsOf(' team-a ,  cost_centre.42 ,team-a,env:prod ')).toEqual(['team-a', 'cost_centre.42', 'env:prod']);
    expect(tagsOf('NULL')).toEqual(['NULL']);
  });

  it('gives no tags without the header or with an empty one', () => {
    expect(tagsOf(undefined)).toBeNull();
    expect(tagsOf('')).toBeNull();
    expect(tagsOf('   ')).toBeNull();
  });

  it('takes ten different tags, and eleven when two are the same', () => {
    const ten = Array.from({ length: 10 }, (_, index) => `t${index}`);
    expect(tagsOf(ten.join(','))).toEqual(ten);
    expect(tagsOf([...ten, 't0'].join(','))).toEqual(ten);
  });

  it('refuses eleven different tags', () => {
    const eleven = Array.from({ length: 11 }, (_, index) => `t${index}`).join(',');
    expect(refusal(eleven).message).toBe('X-Gateway-Tags: 11 different tags; at most 10 are allowed.');
  });

  it('refuses a tag of 65 characters, naming it, and takes one of 64', () => {
    expect(tagsOf('a'.repeat(64))).toEqual(['a'.repeat(64)]);
    const long = 'b'.repeat(65);
    expect(refusal(`ok,${long}`).message).toBe(`X-Gateway-Tags: tag "${long}" has 65 characters; at most 64 are allowed.`);
  });

  it('refuses a character outside the tag alphabet, naming the tag and the character', () => {
    expect(refusal('app:search,env prod').message).toBe('X-Gateway-Tags: tag "env prod" has the character " "; a tag may have only A-Z, a-z, 0-9 and . _ : -');
    expect(refusal('caf\u00e9').message).toContain('tag "café" has the character "é"');
    expect(refusal('a/b').message).toContain('the character "/"');
    expect(refusal('a;b').message).toContain('the character ";"');
  });

  it('refuses an empty tag between commas, naming its place', () => {
    expect(refusal('a,,b').message).toBe('X-Gateway-Tags: tag 2 is empty (tags are separated by single commas).');
    expect(refusal('a,b,').message).toContain('tag 3 is empty');
  });

  it('reads a header given twice as one list', () => {
    expect(tagsOf(['a,b', 'c'])).toEqual(['a', 'b', 'c']);
  });
});

describe(endUserOf.name, () => {
  it('reads `user` of the chat-style entries and `metadata.user_id` of messages', () => {
    const chat = scanned('{"model":"m","user":"user-42","messages":[]}');
    for (const entry of ['chat_completions', 'responses', 'embeddings', 'images_a'] as const) {
      expect(endUserOf(entry, chat.body, chat.fields)).toBe('user-42');
    }
    const messages = scanned('{"model":"m","metadata":{"other":[1,{"user_id":"nested"}],"user_id":"user-\\u0034\\u0032"},"max_tokens":5}');
    expect(endUserOf('messages', messages.body, messages.fields)).toBe('user-42');
  });

  it('reads nothing where the protocol has no end-user member, or where the member is not a non-empty string', () => {
    const chat = scanned('{"model":"m","user":"user-42","metadata":{"user_id":"x"}}');
    for (const entry of ['images_b', 'images_c', 'video_b', 'video_c', 'speech_c'] as const) {
      expect(endUserOf(entry, chat.body, chat.fields)).toBeNull();
    }
    for (const json of ['{"user":42}', '{"user":null}', '{"user":""}', '{"user":{"id":"x"}}', '{}']) {
      const { body, fields } = scanned(json);
      expect(endUserOf('chat_completions', body, fields)).toBeNull();
    }
    for (const json of ['{"metadata":null}', '{"metadata":{"user_id":7}}', '{"metadata":"user"}', '{"metadata":{}}', '{"user":"not here"}']) {
      const { body, fields } = scanned(json);
      expect(endUserOf('messages', body, fields)).toBeNull();
    }
  });

  it('keeps the first 256 characters of a longer end user, reading only the head of a long value', () => {
    const long = `${'é'.repeat(200)}${'\\u00e9'.repeat(5000)}`;
    const { body, fields } = scanned(`{"user":"${long}"}`);
    expect(endUserOf('chat_completions', body, fields)).toBe('é'.repeat(256));

    const escapes = scanned(`{"user":"${'\\"'.repeat(3000)}"}`);
    expect(endUserOf('responses', escapes.body, escapes.fields)).toBe('"'.repeat(256));
  });

  it('does not look into a metadata object too large for a messages request', () => {
    const { body, fields } = scanned(`{"metadata":{"padding":"${'x'.repeat(20_000)}","user_id":"u"}}`);
    expect(endUserOf('messages', body, fields)).toBeNull();
  });
});

describe(endUserOfForm.name, () => {
  it('reads the `user` field of an image-edit form, not a file part of that name', () => {
    const boundary = 'b0undary';
    const form = (parts: string[]) => Buffer.from(`--${boundary}\r\n${parts.join(`\r\n--${boundary}\r\n`)}\r\n--${boundary}--\r\n`);
    const field = (name: string, value: string) => `Content-Disposition: form-data; name="${name}"\r\n\r\n${value}`;
    const file = `Content-Disposition: form-data; name="user"; filename="user.png"\r\nContent-Type: image/png\r\n\r\nPNG`;

    const body = form([field('model', 'image-a'), field('user', 'user-7'), field('prompt', 'a cat')]);
    const parsed = parseForm(body, boundary);
    if (!parsed.ok) throw new Error(parsed.message);
    expect(endUserOfForm('images_a', body, parsed.parts)).toBe('user-7');

    const withFile = form([field('model', 'image-a'), file]);
    const parsedFile = parseForm(withFile, boundary);
    if (!parsedFile.ok) throw new Error(parsedFile.message);
    expect(endUserOfForm('images_a', withFile, parsedFile.parts)).toBeNull();
  });
});

describe(endUserText.name, () => {
  it('keeps nothing of an empty text, turns NUL into U+FFFD, and never splits a surrogate pair', () => {
    expect(endUserText(undefined)).toBeNull();
    expect(endUserText('')).toBeNull();
    expect(endUserText('a\u0000b')).toBe('a\uFFFDb');
    expect(endUserText('x'.repeat(300))).toBe('x'.repeat(256));
    expect(endUserText(`${'x'.repeat(255)}😀tail`)).toBe('x'.repeat(255));
    expect(endUserText(`${'x'.repeat(254)}😀tail`)).toBe(`${'x'.repeat(254)}😀`);
  });
});
