import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/** A `${VAR}` reference, resolved from each replica's environment. */
const REFERENCE = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/;
const SEALED_PREFIX = 'v1:';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** A vendor key as the database keeps it: a reference, or a literal sealed with GATEWAY_SECRET_KEY. */
export type StoredVendorKey = { reference: string; sealed?: undefined } | { sealed: string; reference?: undefined };

/** The variable a `${VAR}` reference names, or undefined for a literal. */
export function referencedVariable(value: string): string | undefined {
  return REFERENCE.exec(value)?.[1];
}

/** What may be shown of a vendor key: its last four characters. */
export function lastFour(key: string): string {
  return key.slice(-4);
}

/**
 * Seals and opens literal vendor keys with AES-256-GCM under GATEWAY_SECRET_KEY (32 bytes).
 * Without that key literals cannot be stored, only references.
 */
export class LineSecrets {
  constructor(private readonly key: Buffer | undefined) {}

  get canSeal(): boolean {
    return this.key !== undefined;
  }

  seal(plaintext: string): string {
    if (!this.key) throw new Error('GATEWAY_SECRET_KEY is not set');
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const sealed = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return SEALED_PREFIX + Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64');
  }

  /** Throws when the key is missing or another key sealed it (GCM's tag does not match). */
  open(sealed: string): string {
    if (!this.key) throw new Error('GATEWAY_SECRET_KEY is not set, so a stored vendor key cannot be read');
    if (!sealed.startsWith(SEALED_PREFIX)) throw new Error('not a sealed vendor key');
    const bytes = Buffer.from(sealed.slice(SEALED_PREFIX.length), 'base64');
    const decipher = createDecipheriv('aes-256-gcm', this.key, bytes.subarray(0, IV_BYTES));
    decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  }
}
