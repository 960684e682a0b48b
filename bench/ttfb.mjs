// Time to first byte of streams at concurrency 1, for several targets at once (bench/run.mjs).
//
// The targets are probed in turns of SLICE_MS each, the order rotating every round, until each
// has had `seconds` of streams: a slow spell of the machine (a database vacuuming beside the
// load generator, another process) then falls on every target alike instead of on whichever
// one was probed during it. One kept-alive connection per target.
import { Pool } from 'undici';

/** One turn of a target: long enough for dozens of streams, short enough to interleave often. */
export const SLICE_MS = 250;

/**
 * `requests`: the stream request of each target, by name ({ url, path, headers, body }).
 * Resolves to each target's figures: streams, errors, ttfb_p50_ms, ttfb_p99_ms, complete_p50_ms.
 */
export async function probeFirstBytes(requests, seconds, sliceMs = SLICE_MS) {
  const probes = Object.entries(requests).map(([name, req]) => ({
    name,
    req,
    pool: new Pool(new URL(req.url).origin, { connections: 1 }),
    ttfb: [],
    total: [],
    errors: 0,
    spentMs: 0,
  }));
  const budgetMs = seconds * 1000;
  try {
    for (let round = 0; probes.some((probe) => probe.spentMs < budgetMs); round++) {
      for (let index = 0; index < probes.length; index++) {
        const probe = probes[(index + round) % probes.length];
        if (probe.spentMs >= budgetMs) continue;
        const turnMs = Math.min(sliceMs, budgetMs - probe.spentMs);
        const started = performance.now();
        while (performance.now() - started < turnMs) await streamOnce(probe);
        probe.spentMs += performance.now() - started;
      }
    }
  } finally {
    await Promise.all(probes.map((probe) => probe.pool.close()));
  }
  return Object.fromEntries(probes.map((probe) => [probe.name, figuresOf(probe)]));
}

async function streamOnce(probe) {
  const { req, pool } = probe;
  const t0 = process.hrtime.bigint();
  let first = null;
  try {
    const response = await pool.request({ path: req.path, method: 'POST', headers: req.headers, body: req.body });
    for await (const part of response.body) if (first === null && part.length > 0) first = process.hrtime.bigint();
    if (response.statusCode !== 200 || first === null) {
      probe.errors++;
      return;
    }
  } catch {
    probe.errors++;
    return;
  }
  probe.ttfb.push(Number(first - t0) / 1e6);
  probe.total.push(Number(process.hrtime.bigint() - t0) / 1e6);
}

function percentile(values, p) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : null;
}

function rounded(value) {
  return value == null ? null : Math.round(value * 1000) / 1000;
}

function figuresOf(probe) {
  return {
    streams: probe.ttfb.length,
    errors: probe.errors,
    ttfb_p50_ms: rounded(percentile(probe.ttfb, 50)),
    ttfb_p99_ms: rounded(percentile(probe.ttfb, 99)),
    complete_p50_ms: rounded(percentile(probe.total, 50)),
  };
}
