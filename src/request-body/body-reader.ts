import type { IncomingMessage } from 'node:http';
import { FormSkeletonBuilder, JsonSkeletonBuilder } from './body-skeleton';
import { BodySpool } from './body-spool';
import { lingerAfterRefusal } from './lingering-close';
import { formBoundary } from './multipart-form';

/** What Fastify's error handling needs to answer 413 (or 400) for a body it could not take. */
export class BodyError extends Error {
  constructor(
    readonly statusCode: 400 | 413,
    message: string,
    readonly code: string,
  ) {
    super(message);
  }
}

/** Bodies larger than `aboveBytes` go to a file in `directory` (body-spool.ts). */
export interface SpoolPolicy {
  aboveBytes: number;
  directory?: string;
}

/** Bytes received but not yet written to the spool before the socket is paused. */
const SPOOL_HIGH_WATER_BYTES = 1024 * 1024;

export type BodyDone = (error: Error | null, body?: Buffer | BodySpool) => void;

/**
 * Gives `error` for a body not wholly read; the rest of it is then read and dropped before the
 * connection closes, so the client gets the answer (lingering-close.ts). Every refusal of a body
 * goes this way, those of the content-type parser included.
 */
export function refuseBody(payload: IncomingMessage, done: BodyDone, error: Error): void {
  lingerAfterRefusal(payload);
  done(error);
}

/**
 * Reads a request body into one Buffer. With a `content-length` the buffer is allocated once at
 * that size and the socket's chunks are copied into it (a chunked body is gathered and joined);
 * a body larger than the spool policy's threshold goes to a file instead and gives a BodySpool.
 * More than `limit` bytes gives 413 without reading further.
 */
export function readBody(payload: IncomingMessage, limit: number, done: BodyDone, spooling?: SpoolPolicy): void {
  const declared = payload.headers['content-length'];
  const expected = declared === undefined ? undefined : Number(declared);
  if (expected !== undefined && (!Number.isSafeInteger(expected) || expected < 0)) {
    refuseBody(payload, done, new BodyError(400, 'Invalid Content-Length header.', 'FST_ERR_CTP_INVALID_CONTENT_LENGTH'));
    return;
  }
  if (expected !== undefined && expected > limit) {
    refuseBody(payload, done, tooLarge());
    return;
  }
  if (spooling && expected !== undefined && expected > spooling.aboveBytes) {
    spoolBody(payload, expected, limit, spooling, [], done);
    return;
  }
  const whole = expected === undefined ? undefined : Buffer.allocUnsafe(expected);
  const parts: Buffer[] = [];
  let received = 0;
  let finished = false;
  const detach = () => {
    payload.off('data', onData);
    payload.off('end', onEnd);
    payload.off('error', onError);
  };
  const finish = (error: Error | null, body?: Buffer) => {
    if (finished) return;
    finished = true;
    detach();
    if (error) refuseBody(payload, done, error);
    else done(null, body);
  };
  const onData = (chunk: Buffer) => {
    if (received + chunk.length > (expected ?? limit)) {
      finish(expected === undefined || received + chunk.length > limit ? tooLarge() : lengthMismatch());
      return;
    }
    if (whole) {
      chunk.copy(whole, received);
    } else if (spooling && received + chunk.length > spooling.aboveBytes) {
      // A chunked body that turns out large: what came so far goes to the file first.
      finished = true;
      detach();
      spoolBody(payload, undefined, limit, spooling, [...parts, chunk], done);
      return;
    } else {
      parts.push(chunk);
    }
    received += chunk.length;
    // Node's parser keeps to Content-Length, so the last byte is the end: no need to wait for
    // `end`, which comes a turn of the event loop later and so adds latency to every call.
    if (received === expected) finish(null, whole);
  };
  const onEnd = () => {
    if (whole) finish(received === expected ? null : lengthMismatch(), whole);
    else finish(null, parts.length === 1 ? parts[0] : Buffer.concat(parts, received));
  };
  const onError = (error: Error) => finish(error);
  payload.on('data', onData);
  payload.on('end', onEnd);
  payload.on('error', onError);
}

/**
 * Writes a large body to a BodySpool as it arrives, building its skeleton on the way; the socket
 * is paused while more than SPOOL_HIGH_WATER_BYTES wait for the disk. Gives the spool once every
 * byte is written; on any failure the file is closed first and the error given after, so no
 * refused body holds a descriptor once its refusal is out.
 */
function spoolBody(payload: IncomingMessage, expected: number | undefined, limit: number, policy: SpoolPolicy, initial: Buffer[], done: BodyDone): void {
  const boundary = formBoundary(payload.headers['content-type']);
  const builder = boundary ? new FormSkeletonBuilder(boundary) : new JsonSkeletonBuilder();
  let spool: BodySpool | undefined;
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let received = 0;
  let writing = false;
  let ended = false;
  let finished = false;
  const opening = BodySpool.open(policy.directory);
  const finish = (error: Error | null) => {
    if (finished) return;
    finished = true;
    payload.off('data', onData);
    payload.off('end', onEnd);
    payload.off('error', onError);
    if (error) {
      // Closed once open (the spool, if set, is this file); a write in flight finishes first (FileHandle.close waits for it).
      const closed = opening.then((opened) => opened.release());
      const report = () => refuseBody(payload, done, error);
      closed.then(report, report);
      return;
    }
    const written = spool!;
    written.skeleton = builder.finish();
    if (builder instanceof JsonSkeletonBuilder) {
      written.fault = builder.fault;
      written.isUtf8 = builder.isUtf8;
    }
    done(null, written);
  };
  const write = () => {
    if (!spool || writing || finished) return;
    if (pending.length === 0) {
      if (ended) finish(null);
      return;
    }
    writing = true;
    const batch = pending;
    pending = [];
    pendingBytes = 0;
    spool.append(batch).then(
      () => {
        writing = false;
        if (!ended && payload.isPaused()) payload.resume();
        write();
      },
      (error: Error) => finish(error),
    );
  };
  const take = (chunk: Buffer) => {
    builder.push(chunk);
    pending.push(chunk);
    pendingBytes += chunk.length;
    received += chunk.length;
  };
  const onData = (chunk: Buffer) => {
    if (received + chunk.length > (expected ?? limit)) {
      finish(expected === undefined || received + chunk.length > limit ? tooLarge() : lengthMismatch());
      return;
    }
    take(chunk);
    if (received === expected) ended = true;
    else if (pendingBytes > SPOOL_HIGH_WATER_BYTES) payload.pause();
    write();
  };
  const onEnd = () => {
    if (expected !== undefined && received !== expected) {
      finish(lengthMismatch());
      return;
    }
    ended = true;
    write();
  };
  const onError = (error: Error) => finish(error);
  for (const chunk of initial) take(chunk);
  payload.on('data', onData);
  payload.on('end', onEnd);
  payload.on('error', onError);
  opening.then(
    (opened) => {
      if (finished) return; // finish() closes it
      spool = opened;
      write();
    },
    (error: Error) => finish(error),
  );
}

function tooLarge(): BodyError {
  return new BodyError(413, 'Request body is too large.', 'FST_ERR_CTP_BODY_TOO_LARGE');
}

function lengthMismatch(): BodyError {
  return new BodyError(400, 'Request body length does not match its Content-Length header.', 'FST_ERR_CTP_INVALID_CONTENT_LENGTH');
}
