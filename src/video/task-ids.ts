import { randomBytes } from 'node:crypto';

/** Prefix of gateway task ids, so they are never mistaken for an upstream's. */
const PREFIX = 'vtask_';

/** A new gateway task id: 144 random bits, unguessable, URL-safe. */
export function newTaskId(): string {
  return PREFIX + randomBytes(18).toString('base64url');
}
