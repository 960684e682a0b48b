import { GatewayError } from '../common/gateway-error';
import type { TopLevelField } from '../request-body/json-scan';
import { readValue } from '../request-body/json-splice';
import type { VideoInterface } from './video-task.entity';

/** What a video submit asks for, as far as admission, reservation and drafts care. */
export interface SubmitFacts {
  /** Requested seconds; undefined when the body names none (reserved as 30). */
  durationSeconds?: number;
  /** Requested resolution as sent; undefined when the body names none. */
  resolution?: string;
  draft: boolean;
  videoInput: boolean;
  inputImageCount: number;
  /** Gateway ids of drafts named by `draft_task` items, in content order (vendor-b). */
  draftTaskIds: string[];
  /** The parsed `content`, present when the body has one (drafts rewrite it). */
  content?: Array<Record<string, unknown>>;
}

/** Content item types whose material sits in the member of the same name, as `{url}`. */
const MATERIAL_TYPES = ['image_url', 'video_url', 'audio_url'] as const;
/** Every member that carries a material or a reference, whatever the item's type says. */
const MATERIAL_MEMBERS = [...MATERIAL_TYPES, 'text', 'draft_task'] as const;
/** Materials must come by address or inline; anything else is stored upstream under the vendor's account. */
const CLIENT_MATERIAL = /^(https?:\/\/|data:)/i;
/** Members that name a file stored upstream instead of carrying the material. */
const UPSTREAM_FILE_MEMBERS = ['file_id', 'asset_id'];

function invalid(message: string): GatewayError {
  return new GatewayError('invalid_request', message);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Checks a submit body against SPEC.md "Video tasks" rules 4, 5 and 9 before anything is
 * reserved or forwarded: no `callback_url`, no `tools`, every content item's material in the
 * member its `type` names, no material stored upstream, drafts on vendor-b only.
 */
export function submitFacts(body: Buffer, fields: ReadonlyMap<string, TopLevelField>, videoInterface: VideoInterface): SubmitFacts {
  for (const name of ['callback_url', 'tools']) {
    if (fields.has(name)) throw invalid(`"${name}" is not supported on video tasks; poll the task with its id instead.`);
  }
  const value = (name: string): unknown => {
    const field = fields.get(name);
    return field ? readValue(body, field) : undefined;
  };
  const facts: SubmitFacts = { draft: false, videoInput: false, inputImageCount: 0, draftTaskIds: [] };

  const duration = value('duration');
  if (duration !== undefined) {
    if (typeof duration !== 'number' || !Number.isInteger(duration) || duration <= 0) {
      throw invalid('"duration" must be a positive whole number of seconds.');
    }
    facts.durationSeconds = duration;
  }
  const resolution = value('resolution');
  if (resolution !== undefined) {
    if (typeof resolution !== 'string' || resolution.trim() === '') throw invalid('"resolution" must be a non-empty string such as "720p".');
    facts.resolution = resolution;
  }
  const draft = value('draft');
  if (draft !== undefined) {
    if (typeof draft !== 'boolean') throw invalid('"draft" must be true or false.');
    if (draft && videoInterface !== 'video_b') throw invalid('"draft" is offered by the vendor-b video interface only.');
    facts.draft = draft;
  }

  const content = value('content');
  if (content === undefined) return facts;
  if (!Array.isArray(content)) throw invalid('"content" must be a list of items, each with a "type".');
  facts.content = content.map((item, index) => checkedItem(item, index, videoInterface, facts));
  return facts;
}

function checkedItem(item: unknown, index: number, videoInterface: VideoInterface, facts: SubmitFacts): Record<string, unknown> {
  const where = `content[${index}]`;
  if (!isObject(item) || typeof item.type !== 'string') throw invalid(`${where} must be an object with a string "type".`);
  const type = item.type;
  for (const member of UPSTREAM_FILE_MEMBERS) {
    if (member in item) throw invalid(`${where}: materials stored upstream ("${member}") are not supported; send an http(s) or data: URL.`);
  }
  for (const member of MATERIAL_MEMBERS) {
    if (member !== type && member in item) throw invalid(`${where}: an item of type "${type}" cannot carry "${member}".`);
  }
  if ((MATERIAL_TYPES as readonly string[]).includes(type)) {
    const material = item[type];
    if (!isObject(material) || typeof material.url !== 'string') throw invalid(`${where}: an item of type "${type}" needs "${type}": {"url": ...}.`);
    if (!CLIENT_MATERIAL.test(material.url)) {
      throw invalid(`${where}: materials stored upstream are not supported; "${type}.url" must be an http(s) or data: URL.`);
    }
    if (type === 'video_url') facts.videoInput = true;
    if (type === 'image_url') facts.inputImageCount += 1;
  } else if (type === 'text') {
    if (typeof item.text !== 'string') throw invalid(`${where}: an item of type "text" needs a string "text".`);
  } else if (type === 'draft_task') {
    if (videoInterface !== 'video_b') throw invalid(`${where}: "draft_task" items are offered by the vendor-b video interface only.`);
    const reference = item.draft_task;
    if (!isObject(reference) || typeof reference.id !== 'string' || reference.id === '') {
      throw invalid(`${where}: an item of type "draft_task" needs "draft_task": {"id": "<task id of the draft>"}.`);
    }
    facts.draftTaskIds.push(reference.id);
  }
  return item;
}
