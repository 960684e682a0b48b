import { GatewayError } from '../common/gateway-error';
import { scanTopLevel } from '../request-body/json-scan';
import { submitFacts, type SubmitFacts } from './submit-rules';
import type { VideoInterface } from './video-task.entity';

/** Runs `submitFacts` on a body written as JSON text, with fields found the way the guard finds them. */
function factsOf(text: string, videoInterface: VideoInterface = 'video_c'): SubmitFacts {
  const body = Buffer.from(text);
  const scan = scanTopLevel(body);
  if (!scan.ok) throw new Error(`test body is not a JSON object: ${scan.message}`);
  return submitFacts(body, scan.fields, videoInterface);
}

/** A body with the given top-level members besides `model`. */
function bodyWith(members: Record<string, unknown>): string {
  return JSON.stringify({ model: 'video-model', ...members });
}

function withContent(items: unknown, extra: Record<string, unknown> = {}): string {
  return bodyWith({ ...extra, content: items });
}

/** The GatewayError `submitFacts` throws for this body; fails the test when it does not throw one. */
function rejectionOf(text: string, videoInterface: VideoInterface = 'video_c'): GatewayError {
  let thrown: unknown;
  try {
    factsOf(text, videoInterface);
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(GatewayError);
  const error = thrown as GatewayError;
  expect(error.code).toBe('invalid_request');
  return error;
}

const IMAGE = { type: 'image_url', image_url: { url: 'https://example.com/cat.png' } };
const VIDEO = { type: 'video_url', video_url: { url: 'https://example.com/clip.mp4' } };
const AUDIO = { type: 'audio_url', audio_url: { url: 'https://example.com/voice.mp3' } };
const TEXT = { type: 'text', text: 'a cat on a skateboard' };

describe(submitFacts.name, () => {
  describe('minimal body', () => {
    it('gives neutral facts when only model is sent', () => {
      expect(factsOf(bodyWith({}))).toEqual({ draft: false, videoInput: false, inputImageCount: 0, draftTaskIds: [] });
    });
  });

  describe('unsupported fields (rule 4)', () => {
    it.each(['callback_url', 'tools'])('rejects %s with a message naming it', (name) => {
      const value = name === 'tools' ? [{ type: 'web_search' }] : 'https://example.com/hook';
      const error = rejectionOf(bodyWith({ [name]: value, content: [TEXT] }));
      expect(error.message).toContain(name);
    });

    it.each(['video_b', 'video_c'] as const)('rejects callback_url on %s even when null', (videoInterface) => {
      const error = rejectionOf(bodyWith({ callback_url: null }), videoInterface);
      expect(error.message).toContain('callback_url');
    });
  });

  describe('duration', () => {
    it('is undefined when absent', () => {
      expect(factsOf(bodyWith({})).durationSeconds).toBeUndefined();
    });

    it.each([1, 5, 10, 120])('accepts the positive integer %d', (duration) => {
      expect(factsOf(bodyWith({ duration })).durationSeconds).toBe(duration);
    });

    it.each([
      ['0', 0],
      ['negative', -5],
      ['fractional', 2.5],
      ['string', '5'],
      ['boolean', true],
      ['null', null],
    ])('rejects a %s duration', (_label, duration) => {
      const error = rejectionOf(bodyWith({ duration }));
      expect(error.message).toContain('duration');
    });
  });

  describe('resolution', () => {
    it('is undefined when absent', () => {
      expect(factsOf(bodyWith({})).resolution).toBeUndefined();
    });

    it.each(['720p', '1080P', '4k'])('keeps the string %s as sent', (resolution) => {
      expect(factsOf(bodyWith({ resolution })).resolution).toBe(resolution);
    });

    it.each([
      ['empty', ''],
      ['blank', '   '],
      ['numeric', 720],
      ['null', null],
    ])('rejects a %s resolution', (_label, resolution) => {
      const error = rejectionOf(bodyWith({ resolution }));
      expect(error.message).toContain('resolution');
    });
  });

  describe('draft', () => {
    it('is false when absent', () => {
      expect(factsOf(bodyWith({}), 'video_b').draft).toBe(false);
    });

    it('accepts draft true on video_b', () => {
      expect(factsOf(bodyWith({ draft: true, content: [TEXT] }), 'video_b').draft).toBe(true);
    });

    it('accepts draft false on video_b', () => {
      expect(factsOf(bodyWith({ draft: false }), 'video_b').draft).toBe(false);
    });

    it('rejects draft true on video_c', () => {
      const error = rejectionOf(bodyWith({ draft: true, content: [TEXT] }), 'video_c');
      expect(error.message).toContain('draft');
    });

    it.each([
      ['string', 'true'],
      ['number', 1],
      ['null', null],
      ['object', {}],
    ])('rejects a %s draft on video_b', (_label, draft) => {
      const error = rejectionOf(bodyWith({ draft }), 'video_b');
      expect(error.message).toContain('draft');
    });
  });

  describe('content shape', () => {
    it('leaves content undefined when absent', () => {
      expect(factsOf(bodyWith({ duration: 5 })).content).toBeUndefined();
    });

    it.each([
      ['object', { type: 'text', text: 'hi' }],
      ['string', 'a cat'],
      ['null', null],
      ['number', 3],
    ])('rejects content that is a %s, not a list', (_label, content) => {
      const error = rejectionOf(bodyWith({ content }));
      expect(error.message).toContain('content');
    });

    it('accepts an empty list', () => {
      const facts = factsOf(withContent([]));
      expect(facts.content).toEqual([]);
      expect(facts.inputImageCount).toBe(0);
    });

    it.each([
      ['a string', 'a cat'],
      ['null', null],
      ['a number', 7],
      ['a list', [TEXT]],
    ])('rejects an item that is %s, naming its index', (_label, item) => {
      const error = rejectionOf(withContent([TEXT, item]));
      expect(error.message).toContain('content[1]');
    });

    it.each([
      ['no type', { text: 'a cat' }],
      ['a numeric type', { type: 1, text: 'a cat' }],
      ['a null type', { type: null, text: 'a cat' }],
      ['an object type', { type: { name: 'text' }, text: 'a cat' }],
    ])('rejects an item with %s', (_label, item) => {
      const error = rejectionOf(withContent([item]));
      expect(error.message).toContain('content[0]');
    });

    it('returns the parsed items in order', () => {
      const items = [TEXT, IMAGE, VIDEO, AUDIO];
      expect(factsOf(withContent(items)).content).toEqual(items);
    });
  });

  describe('material in the member its type names (rule 5)', () => {
    it.each([
      ['image_url carrying video_url', { type: 'image_url', image_url: IMAGE.image_url, video_url: VIDEO.video_url }],
      ['image_url carrying only video_url', { type: 'image_url', video_url: VIDEO.video_url }],
      ['video_url carrying image_url', { type: 'video_url', image_url: IMAGE.image_url }],
      ['audio_url carrying video_url', { type: 'audio_url', audio_url: AUDIO.audio_url, video_url: VIDEO.video_url }],
      ['text carrying image_url', { type: 'text', text: 'a cat', image_url: IMAGE.image_url }],
      ['text carrying draft_task', { type: 'text', text: 'a cat', draft_task: { id: 'task-1' } }],
      ['image_url carrying text', { type: 'image_url', image_url: IMAGE.image_url, text: 'a cat' }],
      ['an unknown type carrying image_url', { type: 'sticker', image_url: IMAGE.image_url }],
    ])('rejects %s', (_label, item) => {
      const error = rejectionOf(withContent([item]), 'video_b');
      expect(error.message).toContain('content[0]');
    });

    it.each([
      ['without its member', { type: 'image_url' }],
      ['with a string member', { type: 'image_url', image_url: 'https://example.com/cat.png' }],
      ['with a null member', { type: 'image_url', image_url: null }],
      ['without a url', { type: 'image_url', image_url: { detail: 'high' } }],
      ['with a numeric url', { type: 'image_url', image_url: { url: 42 } }],
    ])('rejects type image_url %s', (_label, item) => {
      const error = rejectionOf(withContent([item]));
      expect(error.message).toContain('image_url');
    });

    it.each([
      ['video_url', { type: 'video_url' }],
      ['audio_url', { type: 'audio_url', audio_url: {} }],
    ])('rejects type %s without a url', (type, item) => {
      const error = rejectionOf(withContent([item]));
      expect(error.message).toContain(type);
    });

    it.each([
      ['without text', { type: 'text' }],
      ['with numeric text', { type: 'text', text: 3 }],
    ])('rejects a text item %s', (_label, item) => {
      const error = rejectionOf(withContent([item]));
      expect(error.message).toContain('text');
    });

    it('accepts extra non-material members on a well-formed item', () => {
      const item = { type: 'image_url', image_url: { url: 'https://example.com/cat.png' }, role: 'first_frame' };
      expect(factsOf(withContent([item])).content).toEqual([item]);
    });
  });

  describe('materials stored upstream (rule 5)', () => {
    it.each(['file_id', 'asset_id'])('rejects an item with a %s member, naming it', (member) => {
      const error = rejectionOf(withContent([{ type: 'image_url', image_url: IMAGE.image_url, [member]: 'file-123' }]));
      expect(error.message).toContain(member);
    });

    it('rejects a file_id member on an item of otherwise unknown type', () => {
      const error = rejectionOf(withContent([{ type: 'file', file_id: 'file-123' }]));
      expect(error.message).toContain('file_id');
    });

    it.each([
      ['asset://', 'asset://abc123'],
      ['tos://', 'tos://bucket/cat.png'],
      ['a bare id', 'file-abc123'],
      ['ftp://', 'ftp://example.com/cat.png'],
      ['an empty url', ''],
      ['a scheme-relative url', '//example.com/cat.png'],
    ])('rejects an image url given as %s', (_label, url) => {
      const error = rejectionOf(withContent([{ type: 'image_url', image_url: { url } }]));
      expect(error.message).toContain('content[0]');
    });

    it.each([
      ['video_url', 'asset://clip'],
      ['audio_url', 'tos://bucket/voice.mp3'],
    ])('rejects a %s stored upstream', (type, url) => {
      rejectionOf(withContent([{ type, [type]: { url } }]));
    });

    it.each(['https://example.com/cat.png', 'http://example.com/cat.png', 'HTTPS://EXAMPLE.COM/CAT.PNG', 'data:image/png;base64,iVBORw0KGgo='])(
      'accepts the client material %s',
      (url) => {
        const facts = factsOf(withContent([{ type: 'image_url', image_url: { url } }]));
        expect(facts.inputImageCount).toBe(1);
      },
    );

    it('accepts data: and https video and audio materials', () => {
      const items = [
        { type: 'video_url', video_url: { url: 'data:video/mp4;base64,AAAA' } },
        { type: 'audio_url', audio_url: { url: 'https://example.com/voice.mp3' } },
      ];
      expect(factsOf(withContent(items)).content).toEqual(items);
    });
  });

  describe('counting materials', () => {
    it('counts image items and detects video input', () => {
      const facts = factsOf(withContent([TEXT, IMAGE, VIDEO, IMAGE, AUDIO, IMAGE]));
      expect(facts.inputImageCount).toBe(3);
      expect(facts.videoInput).toBe(true);
    });

    it('reports no video input for images, audio and text only', () => {
      const facts = factsOf(withContent([TEXT, IMAGE, AUDIO]));
      expect(facts.videoInput).toBe(false);
      expect(facts.inputImageCount).toBe(1);
    });

    it('detects a video item on its own', () => {
      const facts = factsOf(withContent([VIDEO]));
      expect(facts.videoInput).toBe(true);
      expect(facts.inputImageCount).toBe(0);
    });
  });

  describe('draft_task items (rule 9)', () => {
    it('collects draft ids in content order on video_b', () => {
      const items = [TEXT, { type: 'draft_task', draft_task: { id: 'vt-second' } }, IMAGE, { type: 'draft_task', draft_task: { id: 'vt-first' } }];
      const facts = factsOf(withContent(items), 'video_b');
      expect(facts.draftTaskIds).toEqual(['vt-second', 'vt-first']);
      expect(facts.content).toEqual(items);
    });

    it('rejects a draft_task item on video_c', () => {
      const error = rejectionOf(withContent([{ type: 'draft_task', draft_task: { id: 'vt-1' } }]), 'video_c');
      expect(error.message).toContain('draft_task');
    });

    it.each([
      ['without its member', { type: 'draft_task' }],
      ['without an id', { type: 'draft_task', draft_task: {} }],
      ['with an empty id', { type: 'draft_task', draft_task: { id: '' } }],
      ['with a numeric id', { type: 'draft_task', draft_task: { id: 12 } }],
      ['with a string member', { type: 'draft_task', draft_task: 'vt-1' }],
    ])('rejects a draft_task item %s on video_b', (_label, item) => {
      const error = rejectionOf(withContent([item]), 'video_b');
      expect(error.message).toContain('draft_task');
    });

    it('collects no ids when there are no draft_task items', () => {
      expect(factsOf(withContent([TEXT, IMAGE]), 'video_b').draftTaskIds).toEqual([]);
    });
  });

  describe('unknown item types', () => {
    it.each(['video_b', 'video_c'] as const)('passes an unknown item without material members unchanged on %s', (videoInterface) => {
      const item = { type: 'camera_motion', camera_motion: { pan: 'left' }, strength: 0.5 };
      const facts = factsOf(withContent([item, TEXT]), videoInterface);
      expect(facts.content).toEqual([item, TEXT]);
      expect(facts.inputImageCount).toBe(0);
      expect(facts.videoInput).toBe(false);
      expect(facts.draftTaskIds).toEqual([]);
    });
  });

  describe('a full submit', () => {
    it('gathers every fact of a vendor-b draft follow-up', () => {
      const items = [TEXT, IMAGE, { type: 'draft_task', draft_task: { id: 'vt-draft' } }];
      const facts = factsOf(withContent(items, { duration: 10, resolution: '1080p', draft: false }), 'video_b');
      expect(facts).toEqual({
        durationSeconds: 10,
        resolution: '1080p',
        draft: false,
        videoInput: false,
        inputImageCount: 1,
        draftTaskIds: ['vt-draft'],
        content: items,
      });
    });

    it('reads fields from pretty-printed JSON text', () => {
      const text = `{
        "model": "video-model",
        "duration": 8,
        "resolution": "720p",
        "content": [
          {"type": "text", "text": "waves"},
          {"type": "video_url", "video_url": {"url": "https://example.com/in.mp4"}}
        ]
      }`;
      const facts = factsOf(text);
      expect(facts.durationSeconds).toBe(8);
      expect(facts.resolution).toBe('720p');
      expect(facts.videoInput).toBe(true);
    });
  });
});
