// What Linux's /proc says of the bench's processes and CPUs: CPU time of a process group, of a
// main thread and of the runner, per-CPU busy ticks, resident memory. bench/run.mjs and
// bench/long-streams.mjs read their figures through these.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';

export const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

function statFields(file) {
  const text = fs.readFileSync(file, 'utf8');
  return text.slice(text.lastIndexOf(')') + 2).split(' '); // [0] state, [2] pgrp, [11] utime, [12] stime, [13] cutime, [14] cstime
}

/** CPU seconds (user + system) of every live process in process group `pgid`. */
export function groupCpu(pgid) {
  let ticks = 0;
  for (const entry of fs.readdirSync('/proc')) {
    if (entry.charCodeAt(0) > 57) continue;
    try {
      const f = statFields(`/proc/${entry}/stat`);
      if (Number(f[2]) === pgid) ticks += Number(f[11]) + Number(f[12]);
    } catch {
      /* gone */
    }
  }
  return ticks / CLK_TCK;
}

/** CPU seconds of a process's main thread (the event loop), without its worker and helper threads. */
export function mainThreadCpu(pid) {
  try {
    const f = statFields(`/proc/${pid}/task/${pid}/stat`);
    return (Number(f[11]) + Number(f[12])) / CLK_TCK;
  } catch {
    return 0;
  }
}

/** CPU seconds of this runner plus its reaped children (a load generator run to its end). */
export function ownCpu() {
  const f = statFields('/proc/self/stat');
  return (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / CLK_TCK;
}

/** Per CPU: busy and total ticks from /proc/stat. */
export function cpuTicks() {
  const out = {};
  for (const line of fs.readFileSync('/proc/stat', 'utf8').split('\n')) {
    const m = /^cpu(\d+) (.*)$/.exec(line);
    if (!m) continue;
    const [user, nice, system, idle, iowait = 0, irq = 0, softirq = 0, steal = 0] = m[2].trim().split(/\s+/).map(Number);
    out[`cpu${m[1]}`] = { busy: user + nice + system + irq + softirq, total: user + nice + system + idle + iowait + irq + softirq + steal };
  }
  return out;
}

/** Per CPU, how busy it was between two `cpuTicks()` readings, in whole percent. */
export function busyPercent(before, after) {
  return Object.fromEntries(
    Object.keys(after).map((k) => [k, Math.round((100 * (after[k].busy - before[k].busy)) / Math.max(1, after[k].total - before[k].total))]),
  );
}

/** Busy CPU seconds of the whole machine between two `cpuTicks()` readings. */
export const busySeconds = (before, after) => Object.keys(after).reduce((sum, k) => sum + after[k].busy - before[k].busy, 0) / CLK_TCK;

/** Resident memory of a process in bytes; 0 once it is gone. */
export function rssOf(pid) {
  try {
    return Number(/^VmRSS:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) * 1024;
  } catch {
    return 0;
  }
}
