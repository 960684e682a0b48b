import { randomBytes } from 'node:crypto';

/** Prefix of gateway task ids, so they are never mistaken for an upstream's. */
const PREFIX = 'vtask_';

/** A new gateway task id: 144 random bits, unguessable, URL-safe. */
export function newTaskId(): string {
  return PREFIX + randomBytes(18).toString('base64url');
}

const TASK_ID = /^vtask_[A-Za-z0-9_-]{24}$/;

/** Whether `text` has the form of a gateway task id; anything else (NUL bytes included) is never looked up. */
export function isTaskId(text: string): boolean {
  return TASK_ID.test(text);
}
