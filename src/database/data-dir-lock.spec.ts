import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { acquireDataDirLock, DataDirInUseError, DataDirLock, describeThisProcess, LOCK_FILE_NAME, LockHolder } from './data-dir-lock';

const DIST_LOCK = join(__dirname, '../../dist/src/database/data-dir-lock.js');

/** The pid of a process that has ended (and been reaped). */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'console.log(process.pid)'], { encoding: 'utf8' });
  return Number(child.stdout.trim());
}

async function afterTurns(turns: number): Promise<void> {
  for (let turn = 0; turn < turns; turn += 1) await new Promise((resolve) => setImmediate(resolve));
}

function startTicksOf(pid: number): string {
  const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return text.slice(text.lastIndexOf(')') + 2).split(' ')[19];
}

describe('acquireDataDirLock', () => {
  const folders: string[] = [];
  const locks: DataDirLock[] = [];

  function folder(): string {
    const made = mkdtempSync(join(tmpdir(), 'data-dir-lock-'));
    folders.push(made);
    return made;
  }

  async function acquire(dataDir: string, command?: string): Promise<DataDirLock> {
    const lock = await acquireDataDirLock(dataDir, command);
    locks.push(lock);
    return lock;
  }

  function writeHolder(dataDir: string, holder: Partial<LockHolder>): void {
    const whole = { host: hostname(), started: '2026-01-01T00:00:00.000Z', command: 'gateway', token: 'an-earlier-lock', ...holder };
    writeFileSync(join(dataDir, LOCK_FILE_NAME), JSON.stringify(whole));
  }

  afterEach(() => {
    for (const lock of locks.splice(0)) lock.release();
  });

  afterAll(() => {
    for (const made of folders) rmSync(made, { recursive: true, force: true });
  });

  it('creates the folder and a lock file naming this process, and removes the file on release', async () => {
    const dataDir = join(folder(), 'data');

    const lock = await acquire(dataDir, 'gateway');
    const written = JSON.parse(readFileSync(join(dataDir, LOCK_FILE_NAME), 'utf8'));
    lock.release();

    expect(written).toEqual({
      pid: process.pid,
      host: hostname(),
      started: expect.any(String),
      command: 'gateway',
      token: expect.any(String),
      startTicks: startTicksOf(process.pid),
    });
    expect(lock.tookOver).toBeUndefined();
    expect(readdirSync(dataDir)).toEqual([]);
  });

  it('refuses a second lock on a folder this process holds, naming the folder, the holder and the admin API', async () => {
    const dataDir = folder();
    await acquire(dataDir, 'gateway');

    const second = acquire(dataDir, 'admin command (owners create)');

    await expect(second).rejects.toBeInstanceOf(DataDirInUseError);
    await expect(second).rejects.toThrow(`The embedded database folder ${dataDir} is in use by process ${process.pid} (gateway) on host ${hostname()}`);
    await expect(second).rejects.toThrow('admin API (set ADMIN_TOKEN and use the /admin/... routes');
  });

  it('refuses while the holder is another running process', async () => {
    const dataDir = folder();
    const holder = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    try {
      await new Promise((resolve) => holder.once('spawn', resolve));
      writeHolder(dataDir, { pid: holder.pid, startTicks: startTicksOf(holder.pid!) });

      await expect(acquire(dataDir)).rejects.toThrow(`in use by process ${holder.pid} (gateway)`);
    } finally {
      holder.kill('SIGKILL');
    }
  });

  it('takes over the lock of a process that is gone, and says whose it was', async () => {
    const dataDir = folder();
    const pid = deadPid();
    writeHolder(dataDir, { pid });

    const lock = await acquire(dataDir);

    expect(lock.tookOver).toMatchObject({ pid, command: 'gateway' });
    expect(JSON.parse(readFileSync(lock.path, 'utf8')).token).toBe(lock.holder.token);
  });

  it("takes over a lock of this process's pid that this process did not take (a restarted container's pid 1)", async () => {
    const dataDir = folder();
    writeHolder(dataDir, { pid: process.pid });

    const lock = await acquire(dataDir);

    expect(lock.tookOver).toMatchObject({ pid: process.pid, token: 'an-earlier-lock' });
  });

  it('takes over the lock of a pid now used by another process (its start time differs)', async () => {
    const dataDir = folder();
    writeHolder(dataDir, { pid: process.ppid, startTicks: '1' });

    const lock = await acquire(dataDir);

    expect(lock.tookOver).toMatchObject({ pid: process.ppid });
  });

  it('takes over the lock of a process that has exited but not been reaped by its parent', async () => {
    const dataDir = folder();
    // The shell's background child ends at once; `sleep`, which the shell becomes, never reaps it.
    const parent = spawn('sh', ['-c', 'sleep 0 & echo $!; exec sleep 30'], { stdio: ['ignore', 'pipe', 'ignore'] });
    try {
      const pid = Number(await new Promise<string>((resolve) => parent.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString('utf8')))));
      while (!readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z ')) await new Promise((resolve) => setTimeout(resolve, 10));
      writeHolder(dataDir, { pid, startTicks: startTicksOf(pid) });

      const lock = await acquire(dataDir);

      expect(lock.tookOver).toMatchObject({ pid });
    } finally {
      parent.kill('SIGKILL');
    }
  });

  it('leaves the lock of another host alone and says how to remove it', async () => {
    const dataDir = folder();
    writeHolder(dataDir, { pid: deadPid(), host: 'another-host.example' });

    const attempt = acquire(dataDir);

    await expect(attempt).rejects.toThrow('is locked by process');
    await expect(attempt).rejects.toThrow(
      `If no process on another-host.example uses the folder any more, delete ${join(dataDir, LOCK_FILE_NAME)} and start again.`,
    );
    expect(existsSync(join(dataDir, LOCK_FILE_NAME))).toBe(true);
  });

  it('waits for an unreadable lock file that may still be being written, then refuses', async () => {
    const dataDir = folder();
    writeFileSync(join(dataDir, LOCK_FILE_NAME), '{"pid":');

    await expect(acquire(dataDir)).rejects.toThrow('could not be locked');
  });

  it('takes over an unreadable lock file once it is old', async () => {
    const dataDir = folder();
    const path = join(dataDir, LOCK_FILE_NAME);
    writeFileSync(path, '');
    const anHourAgo = new Date(Date.now() - 3_600_000);
    utimesSync(path, anHourAgo, anHourAgo);

    const lock = await acquire(dataDir);

    expect(lock.tookOver).toBe('unreadable');
  });

  it('names the folder when it cannot be created', async () => {
    const file = join(folder(), 'a-file');
    writeFileSync(file, 'not a folder');

    await expect(acquire(join(file, 'data'))).rejects.toThrow(`The embedded database folder ${join(file, 'data')} cannot be locked: ENOTDIR`);
  });

  it('does not remove a lock that is no longer its own on release', async () => {
    const dataDir = folder();
    const lock = await acquire(dataDir);
    writeHolder(dataDir, { pid: deadPid(), token: 'someone-else' });

    lock.release();

    expect(JSON.parse(readFileSync(lock.path, 'utf8')).token).toBe('someone-else');
  });

  it('lets exactly one of several acquirers in this process take over a stale lock, round after round', async () => {
    const dataDir = folder();
    const pid = deadPid();
    for (let round = 0; round < 25; round += 1) {
      writeHolder(dataDir, { pid, token: `stale-${round}` });

      // Started a few event-loop turns apart, so that one's take-over overlaps another's at every step.
      const attempts = await Promise.allSettled([0, 1, 2, 3, 4, 5].map((turns) => afterTurns(turns * (round % 4)).then(() => acquire(dataDir))));

      const won = attempts.filter((attempt) => attempt.status === 'fulfilled');
      expect({ round, won: won.length }).toEqual({ round, won: 1 });
      for (const attempt of attempts) if (attempt.status === 'rejected') expect(attempt.reason).toBeInstanceOf(DataDirInUseError);
      (won[0] as PromiseFulfilledResult<DataDirLock>).value.release();
    }
    expect(readdirSync(dataDir)).toEqual([]);
  });

  it('lets exactly one of several processes racing over a stale lock take it over', async () => {
    if (!existsSync(DIST_LOCK)) throw new Error(`${DIST_LOCK} is missing: run \`npm run build\` first`);
    const dataDir = folder();
    writeHolder(dataDir, { pid: deadPid() });
    const startAt = Date.now() + 1_500;
    // Each process waits for the same moment, tries once, prints its result; a winner holds until its input closes.
    const script = `
      const { acquireDataDirLock } = require(${JSON.stringify(DIST_LOCK)});
      setTimeout(() => acquireDataDirLock(${JSON.stringify(dataDir)}, 'racer').then(
        (lock) => { console.log('won'); process.stdin.on('end', () => lock.release()).resume(); },
        (error) => { console.log(error.name); },
      ), ${startAt} - Date.now());`;
    const racers = [1, 2, 3, 4, 5, 6].map(() => spawn(process.execPath, ['-e', script], { stdio: ['pipe', 'pipe', 'inherit'] }));
    const exited = racers.map((racer) => new Promise((resolve) => racer.once('exit', resolve)));
    try {
      const results = await Promise.all(
        racers.map(
          (racer) =>
            new Promise<string>((resolve) => {
              let output = '';
              racer.stdout.on('data', (chunk: Buffer) => {
                output += chunk.toString('utf8');
                if (output.endsWith('\n')) resolve(output.trim());
              });
              void exited[racers.indexOf(racer)].then(() => resolve(output.trim()));
            }),
        ),
      );

      expect(results.filter((result) => result === 'won')).toHaveLength(1);
      expect(results.filter((result) => result === 'DataDirInUseError')).toHaveLength(racers.length - 1);
    } finally {
      for (const racer of racers) racer.stdin.end();
      await Promise.all(exited);
    }
    expect(readdirSync(dataDir)).toEqual([]);
  });

  it('removes its lock when the process exits without releasing it', () => {
    if (!existsSync(DIST_LOCK)) throw new Error(`${DIST_LOCK} is missing: run \`npm run build\` first`);
    const dataDir = folder();
    const script = `require(${JSON.stringify(DIST_LOCK)}).acquireDataDirLock(${JSON.stringify(dataDir)}).then(() => process.exit(3));`;

    const child = spawnSync(process.execPath, ['-e', script]);

    expect(child.status).toBe(3);
    expect(readdirSync(dataDir)).toEqual([]);
  });
});

describe('describeThisProcess', () => {
  it('names the gateway and the admin command, keeping only the words of a command', () => {
    expect(describeThisProcess(['node', '/app/dist/src/main.js'])).toBe('gateway');
    expect(describeThisProcess(['node', '/app/dist/scripts/admin.js', 'owners', 'create', '--id', 'team-b'])).toBe('admin command (owners create)');
    expect(describeThisProcess(['node', '/app/dist/scripts/admin.js', 'keys', 'disable', 'b6c1…'])).toBe('admin command (keys disable)');
    expect(describeThisProcess(['node', join(process.cwd(), 'dist/scripts/demo.js')])).toBe('node dist/scripts/demo.js');
  });
});
