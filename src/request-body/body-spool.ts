import { randomUUID } from 'node:crypto';
import { open, unlink } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Skeleton, SkeletonFault, SkeletonMap } from './body-skeleton';
import type { TopLevelField } from './json-scan';

/**
 * A large request body kept in a file instead of memory (docs/configuration.md "Large bodies"): eight 30 MiB
 * uploads at once would otherwise hold 240 MiB, more than the rest of the gateway. The guards and
 * services work on the body's skeleton (body-skeleton.ts), and the body goes upstream from the
 * file with the skeleton's changes (`model` spliced in) in place, once per line tried.
 *
 * The file is removed from its folder as soon as it is opened: nothing is left behind, even when
 * the process dies; the open handle keeps it until the last user lets go of it (`release`).
 */
export class BodySpool {
  /** Total bytes written. */
  length = 0;
  skeleton!: Skeleton;
  /** For a JSON body: a fault in the part of the body the skeleton leaves out. */
  fault: SkeletonFault | undefined;
  /** For a JSON body: whether the whole body is UTF-8. */
  isUtf8 = true;
  private users = 1;
  private closed: Promise<void> | undefined;

  private constructor(private readonly handle: FileHandle) {}

  /** Opens a new, already unlinked file in `directory`. */
  static async open(directory: string = tmpdir()): Promise<BodySpool> {
    const path = join(directory, `gateway-body-${process.pid}-${randomUUID()}`);
    const handle = await open(path, 'wx+', 0o600);
    try {
      await unlink(path);
    } catch (error) {
      await handle.close();
      throw error;
    }
    return new BodySpool(handle);
  }

  /** Appends `chunks` (one write call). */
  async append(chunks: Buffer[]): Promise<void> {
    const at = this.length;
    let size = 0;
    for (const chunk of chunks) size += chunk.length;
    this.length += size;
    let written = 0;
    while (written < size) {
      const { bytesWritten } = await this.handle.writev(written === 0 ? chunks : remainingAfter(chunks, written), at + written);
      written += bytesWritten;
    }
  }

  /** Another user (a call going upstream, a body being sent) keeps the file open until it calls `release`. */
  retain(): void {
    if (this.users === 0) throw new Error('The spooled body was already released.');
    this.users++;
  }

  /** The file is closed when its last user lets go. */
  release(): Promise<void> {
    if (this.users === 0) return this.closed ?? Promise.resolve();
    this.users--;
    if (this.users === 0) this.closed = this.handle.close();
    return this.closed ?? Promise.resolve();
  }

  get isOpen(): boolean {
    return this.users > 0;
  }

  /** The body's bytes `[start, end)`, in reads of at most READ_BYTES; holds the file while it runs. */
  async *read(start: number, end: number): AsyncGenerator<Buffer> {
    this.retain();
    try {
      for (let position = start; position < end;) {
        const buffer = Buffer.allocUnsafe(Math.min(READ_BYTES, end - position));
        const { bytesRead } = await this.handle.read(buffer, 0, buffer.length, position);
        if (bytesRead === 0) throw new Error('The spooled body ended early.');
        position += bytesRead;
        yield bytesRead === buffer.length ? buffer : buffer.subarray(0, bytesRead);
      }
    } finally {
      await this.release();
    }
  }

  /** The whole body as text (a translated call parses it whole). */
  async text(): Promise<string> {
    return (await this.bytes(0, this.length)).toString('utf8');
  }

  /** The body's bytes `[start, end)` in one buffer. */
  async bytes(start: number, end: number): Promise<Buffer> {
    const chunks: Buffer[] = [];
    for await (const chunk of this.read(start, end)) chunks.push(chunk);
    return Buffer.concat(chunks, end - start);
  }

  /**
   * The value of a top-level member found in the skeleton, read from the file: what the skeleton
   * holds has its long strings cut, so a value that goes upstream again is read here.
   */
  async value(field: TopLevelField): Promise<unknown> {
    const { map } = this.skeleton;
    return JSON.parse((await this.bytes(map.bodyOffset(field.valueStart), map.bodyOffset(field.valueEnd))).toString('utf8'));
  }

  /**
   * What goes upstream for `parts` built from the skeleton: a part cut from the skeleton stands for
   * the same range of the body (with what the skeleton left out), any other part is sent as it is.
   */
  upstreamBody(parts: readonly Buffer[]): SpooledUpstreamBody {
    const { bytes, map } = this.skeleton;
    const pieces: SpooledPiece[] = [];
    let length = 0;
    for (const part of parts) {
      if (part.length === 0) continue;
      const piece = part.buffer === bytes.buffer ? bodyRange(map, part.byteOffset - bytes.byteOffset, part.length) : part;
      pieces.push(piece);
      length += Buffer.isBuffer(piece) ? piece.length : piece.end - piece.start;
    }
    return new SpooledUpstreamBody(this, pieces, length);
  }
}

/** Reads from the file go upstream in pieces of this size. */
const READ_BYTES = 256 * 1024;

/** A range of the spooled body. */
export interface BodyRange {
  start: number;
  end: number;
}

export type SpooledPiece = Buffer | BodyRange;

function bodyRange(map: SkeletonMap, offset: number, length: number): BodyRange {
  return { start: map.bodyOffset(offset), end: map.bodyOffset(offset + length) };
}

/** A body sent upstream from a spool: each send reads the file again (failover to the next line). */
export class SpooledUpstreamBody {
  constructor(
    readonly spool: BodySpool,
    readonly pieces: readonly SpooledPiece[],
    readonly length: number,
  ) {}

  async *chunks(): AsyncGenerator<Buffer> {
    for (const piece of this.pieces) {
      if (Buffer.isBuffer(piece)) yield piece;
      else yield* this.spool.read(piece.start, piece.end);
    }
  }
}

function remainingAfter(chunks: Buffer[], written: number): Buffer[] {
  const rest: Buffer[] = [];
  let skipped = 0;
  for (const chunk of chunks) {
    if (skipped + chunk.length <= written) {
      skipped += chunk.length;
      continue;
    }
    rest.push(skipped >= written ? chunk : chunk.subarray(written - skipped));
    skipped += chunk.length;
  }
  return rest;
}
