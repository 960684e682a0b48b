import { createHash, hash } from 'node:crypto';

/** SHA-256 in hex. `crypto.hash` (Node 20.12+) is a one-shot call, about twice as fast as a Hash object. */
export function sha256Hex(text: string): string {
  return typeof hash === 'function' ? hash('sha256', text, 'hex') : createHash('sha256').update(text).digest('hex');
}
