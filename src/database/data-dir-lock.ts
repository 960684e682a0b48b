import { createHash, randomUUID } from 'node:crypto';
import { readFileSync, unlinkSync } from 'node:fs';
import { link, mkdir, open, unlink, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { basename, join, relative, resolve } from 'node:path';

/**
 * One process per embedded folder. Two PostgreSQL engines on one folder lose or corrupt data
 * (PGlite takes no lock of its own), so whoever opens a folder first writes `gateway.lock`
 * into it and every other process refuses until that one is gone.
 *
 * The lock file is created whole (written under a temporary name, then hard-linked into place,
 * which fails when the name exists) and never changed afterwards, so its bytes identify it. A
 * lock whose process is gone (killed, the machine restarted) is taken over; a lock written on
 * another host (a shared volume) is not, since this host cannot tell whether its process runs.
 */
export const LOCK_FILE_NAME = 'gateway.lock';

/** What the lock file holds (JSON). */
export interface LockHolder {
  pid: number;
  host: string;
  /** When the lock was taken (ISO 8601). */
  started: string;
  /** What the process is, for people: `gateway`, `admin command (owners create)`, … */
  command: string;
  /** Tells this lock from any other one of the same process id (a restarted container's pid 1). */
  token: string;
  /** Linux: the process's start time in clock ticks since boot, so that a reused pid is not taken for the holder. */
  startTicks?: string;
}

/** A lock this process holds; `release` is idempotent. */
export interface DataDirLock {
  readonly path: string;
  readonly holder: LockHolder;
  /** The holder of the stale lock this one replaced, `unreadable` for a damaged file; undefined when there was none. */
  readonly tookOver?: LockHolder | 'unreadable';
  release(): void;
}

/** Another process holds the folder, or its lock cannot be judged: the process must not open it. */
export class DataDirInUseError extends Error {
  constructor(message: string) {
    super(message);
    // An operator's message, not a fault: printed without a stack trace by whoever reports it.
    this.stack = message;
  }
}
DataDirInUseError.prototype.name = 'DataDirInUseError';

/** How long a contested lock (being written, or being taken over) is waited for before refusing. */
const CONTESTED_WAIT_MS = 2_000;
const RETRY_MS = 25;
/** An unreadable lock younger than this may still be being written (file systems without hard links). */
const UNREADABLE_GRACE_MS = 10_000;
/** File systems that refuse hard links: the lock is then created with an exclusive open. */
const NO_HARD_LINKS = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS']);

/** Tokens of the locks this process holds or is taking: a lock of this pid with another token is a previous life's. */
const ownTokens = new Set<string>();
const held = new Map<string, DataDirLock>();

/**
 * Takes the folder's lock (creating the folder if needed) or throws DataDirInUseError naming
 * the holder. Call before anything opens the folder.
 */
export async function acquireDataDirLock(dataDir: string, command = describeThisProcess()): Promise<DataDirLock> {
  const folder = resolve(dataDir);
  const path = join(folder, LOCK_FILE_NAME);
  const holder: LockHolder = { pid: process.pid, host: hostname(), started: new Date().toISOString(), command, token: randomUUID() };
  const startTicks = startTicksOf(process.pid);
  if (startTicks !== undefined) holder.startTicks = startTicks;
  const content = `${JSON.stringify(holder)}\n`;
  ownTokens.add(holder.token);
  let tookOver: LockHolder | 'unreadable' | undefined;
  const deadline = Date.now() + CONTESTED_WAIT_MS;
  try {
    await mkdir(folder, { recursive: true });
    for (;;) {
      if (await createLock(path, content, holder.token)) return remember({ path, holder, tookOver, release: () => releaseLock(path, holder.token) });
      const found = await readLock(path);
      const verdict = found && judge(found);
      if (found?.holder && verdict === 'running') throw new DataDirInUseError(inUseMessage(folder, path, found.holder));
      if (found?.holder && verdict === 'other host') throw new DataDirInUseError(otherHostMessage(folder, path, found.holder));
      if (found && verdict === 'stale' && (await removeStale(path, found))) {
        tookOver = found.holder ?? 'unreadable';
        continue;
      }
      // Removed in between, being written, or being taken over by another process right now.
      if (Date.now() >= deadline) throw new DataDirInUseError(contestedMessage(folder, path, found));
      await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
    }
  } catch (error) {
    ownTokens.delete(holder.token);
    if (error instanceof DataDirInUseError) throw error;
    // A read-only volume, a file in the folder's place, missing permissions: named with the folder.
    const reason = (error as Partial<Error> | undefined)?.message ?? String(error);
    throw new Error(`The embedded database folder ${folder} cannot be locked: ${reason}`, { cause: error });
  }
}

interface FoundLock {
  text: string;
  holder?: LockHolder;
  inode: number;
  modifiedMs: number;
}

/** True when the lock is now ours; false when a lock file exists. */
async function createLock(path: string, content: string, token: string): Promise<boolean> {
  const temporary = `${path}.${token}.new`;
  await writeFile(temporary, content, { flag: 'wx' });
  try {
    await link(temporary, path);
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? '';
    if (code === 'EEXIST') return false;
    if (!NO_HARD_LINKS.has(code)) throw error;
  } finally {
    await unlink(temporary).catch(() => undefined);
  }
  try {
    await writeFile(path, content, { flag: 'wx' });
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
}

async function readLock(path: string): Promise<FoundLock | undefined> {
  let handle;
  try {
    handle = await open(path, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  try {
    const stats = await handle.stat();
    const text = await handle.readFile('utf8');
    return { text, holder: parseHolder(text), inode: stats.ino, modifiedMs: stats.mtimeMs };
  } finally {
    await handle.close();
  }
}

function parseHolder(text: string): LockHolder | undefined {
  try {
    const value = JSON.parse(text) as Partial<LockHolder>;
    const valid = Number.isInteger(value.pid) && value.pid! > 0 && typeof value.host === 'string' && typeof value.token === 'string';
    return valid ? (value as LockHolder) : undefined;
  } catch {
    return undefined;
  }
}

function judge(found: FoundLock): 'running' | 'other host' | 'stale' | 'unsure' {
  if (!found.holder) return Date.now() - found.modifiedMs < UNREADABLE_GRACE_MS ? 'unsure' : 'stale';
  if (found.holder.host !== hostname()) return 'other host';
  return isRunning(found.holder) ? 'running' : 'stale';
}

function isRunning(holder: LockHolder): boolean {
  if (holder.pid === process.pid) return ownTokens.has(holder.token);
  try {
    process.kill(holder.pid, 0);
  } catch (error) {
    // EPERM: the process exists and belongs to another user.
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
  }
  const now = processStat(holder.pid);
  if (now === undefined) return true; // no /proc: the signal's answer stands
  if (now.state === 'Z') return false; // exited, not yet reaped by its parent
  return holder.startTicks === undefined || holder.startTicks === now.startTicks;
}

/**
 * Removes a stale lock unless another process got there first. Only the process that creates
 * the claim file named after the stale lock's bytes may remove it, and it does so only if the
 * lock is still those bytes: two processes taking over one stale lock cannot both remove a lock,
 * nor one remove the lock the other has just made.
 */
async function removeStale(path: string, stale: FoundLock): Promise<boolean> {
  const claim = claimPathOf(path, stale);
  try {
    await writeFile(claim, `${process.pid}\n`, { flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
  try {
    const now = await readLock(path);
    if (!now || now.text !== stale.text || now.inode !== stale.inode || now.modifiedMs !== stale.modifiedMs) return false;
    await unlink(path);
    return true;
  } finally {
    await unlink(claim).catch(() => undefined);
  }
}

function claimPathOf(path: string, stale: FoundLock): string {
  return `${path}.${createHash('sha256').update(stale.text).digest('hex').slice(0, 16)}.takeover`;
}

function releaseLock(path: string, token: string): void {
  if (!held.has(path) || held.get(path)!.holder.token !== token) return;
  try {
    // Only our own lock: after a take-over by someone else the file is no longer ours to remove.
    if (parseHolder(readFileSync(path, 'utf8'))?.token === token) unlinkSync(path);
  } catch {
    // Gone already.
  }
  held.delete(path);
  ownTokens.delete(token);
}

let exitHookInstalled = false;

function remember(lock: DataDirLock): DataDirLock {
  held.set(lock.path, lock);
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    // A backstop for exits that skip the engine's close (process.exit, an uncaught error).
    process.once('exit', () => {
      for (const each of [...held.values()]) each.release();
    });
  }
  return lock;
}

/** `/proc/<pid>/stat`: the state letter and the start time in ticks; undefined off Linux or when the process is gone. */
function processStat(pid: number): { state: string; startTicks: string } | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name (field 2) is in parentheses and may hold spaces; fields 3 onwards follow.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { state: fields[0], startTicks: fields[19] };
}

function startTicksOf(pid: number): string | undefined {
  return processStat(pid)?.startTicks;
}

/** This process as the refusal names it: the gateway and the admin command by name, else its script. */
export function describeThisProcess(argv: string[] = process.argv): string {
  const script = argv[1] ?? '';
  const name = basename(script).replace(/\.[cm]?[jt]s$/, '');
  if (name === 'main') return 'gateway';
  if (name === 'admin') {
    // The command's words only: option values may be secrets.
    const words = argv.slice(2, 4).filter((word) => /^[a-z-]+$/.test(word));
    return words.length > 0 ? `admin command (${words.join(' ')})` : 'admin command';
  }
  return script ? `node ${relative(process.cwd(), script) || script}` : 'node';
}

function holderText(holder: LockHolder): string {
  return `process ${holder.pid} (${holder.command || 'unknown'}) on host ${holder.host}, since ${holder.started}`;
}

const ADMIN_API_HINT =
  'While the gateway runs, change owners and keys through its admin API (set ADMIN_TOKEN and use the /admin/... routes, see docs/operations.md "Admin API") instead of a second process on the folder.';

function inUseMessage(folder: string, path: string, holder: LockHolder): string {
  return (
    `The embedded database folder ${folder} is in use by ${holderText(holder)}. ` +
    `Two processes on one embedded folder lose or corrupt data, so this one stops without opening it. ${ADMIN_API_HINT} ` +
    `(The lock is ${path}; it goes when that process stops.)`
  );
}

function otherHostMessage(folder: string, path: string, holder: LockHolder): string {
  return (
    `The embedded database folder ${folder} is locked by ${holderText(holder)}, not this host (${hostname()}), ` +
    `so whether that process still runs cannot be told from here, and this one stops without opening the folder. ${ADMIN_API_HINT} ` +
    `If no process on ${holder.host} uses the folder any more, delete ${path} and start again.`
  );
}

function contestedMessage(folder: string, path: string, found: FoundLock | undefined): string {
  const who = found?.holder ? `the lock of ${holderText(found.holder)}` : 'its lock file';
  return (
    `The embedded database folder ${folder} could not be locked: ${who} is being written or taken over by another process. ` +
    `If no process uses the folder, delete ${path} and any ${basename(path)}.*.takeover beside it, and start again.`
  );
}
