#!/usr/bin/env node
// The load client of `npm run bench:streams` (bench/long-streams.mjs), a process of its own:
// opens the spec's `streams` streaming calls against one target, evenly over `rampSeconds`, keeps
// every one open until its end and notes when each content chunk arrives (process.hrtime).
//
//   node bench/stream-client.mjs --spec '{"url": …, "headers": …, "body": …, "kind": "chat", …}'
//
// spec: url (the full URL), headers, body (a string), kind (chat | messages | responses: which
// SSE events are content and which one ends the stream), streams, chunks (content chunks a
// complete stream has), rampSeconds, streamSeconds (how long a stream lasts upstream),
// timeoutSeconds (streams still open then are cut off and counted as errors), holdSeconds
// (optional: until then, each stream that ends is followed by a new one, so `streams` stay open;
// the run ends when the last of them has ended).
//
// stdout: `STARTED` when the first call goes out, `ENDED` when the last stream has ended (the
// runner reads the targets' CPU at both), then one line of JSON with the figures. A stream is an
// error when its status is not 200, it ends before its end event (`[DONE]`, `message_stop`,
// `response.completed`), it carries another number of content chunks than `chunks`, or its
// socket fails.
//
// A chunk is a piece of the body as the socket delivers it (one `data` event) that holds at least
// one content event; the gaps are the times between two such pieces of one stream. Their
// percentiles are also given by phase, after when the later piece arrived: `ramp` (while streams
// are being opened), `steady` (every stream open, none ended yet; with a hold, until its end) and
// `ending` (streams ending).
import http from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { spec: { type: 'string' } } });
const spec = JSON.parse(values.spec);
const { url, headers, body, kind, streams, chunks } = spec;
const rampMs = spec.rampSeconds * 1000;
const holdMs = (spec.holdSeconds ?? 0) * 1000;
const target = new URL(url);

/** What a content event and the end of a stream look like in each protocol's SSE body. */
const MARKERS = {
  chat: { content: '"delta":{', end: 'data: [DONE]' },
  messages: { content: '"type":"content_block_delta"', end: '"type":"message_stop"' },
  responses: { content: '"type":"response.output_text.delta"', end: '"type":"response.completed"' },
};
const { content: CONTENT, end: END } = MARKERS[kind];
// A marker may be cut in two by a socket read: each piece is searched with the end of the one before.
const CARRY = Math.max(CONTENT.length, END.length) - 1;

const now = () => Number(process.hrtime.bigint()) / 1e6; // ms
const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
const loop = monitorEventLoopDelay({ resolution: 10 });
loop.enable();

// Every gap of every stream, ms; a hold keeps an even sample of 4 million (64 MiB here; 10 minutes of 5,000 streams have 12 million).
const gaps = new Float64Array(
  Math.ceil(Math.min(4e6, (streams * Math.max(1, chunks) * (spec.streamSeconds + holdMs / 1000)) / Math.max(1, spec.streamSeconds))),
);
const gapAt = new Float64Array(gaps.length); // when each gap ended, ms from the start
let gapCount = 0;
let gapsSeen = 0;

/** Notes a gap that ended at `at`; past the arrays' length, each gap replaces a kept one with the chance that keeps the sample even. */
function noteGap(gap, at) {
  const slot = gapsSeen++ < gaps.length ? gapCount++ : Math.floor(Math.random() * gapsSeen);
  if (slot >= gaps.length) return;
  gaps[slot] = gap;
  gapAt[slot] = at;
}
const headersMs = []; // request sent → response headers
const firstChunkMs = []; // request sent → first content chunk
const errors = {};
const examples = [];
let opened = 0;
let finished = 0;
let completed = 0;
let contentChunks = 0; // content events received, in every stream
let openNow = 0;
let openMax = 0;

function fail(stream, reason, detail) {
  if (stream.done) return;
  stream.done = true;
  errors[reason] = (errors[reason] ?? 0) + 1;
  if (examples.length < 5) examples.push(`${reason}${detail ? `: ${detail}` : ''}`);
  settle();
}

function succeed(stream) {
  if (stream.done) return;
  stream.done = true;
  completed++;
  settle();
}

function settle() {
  finished++;
  openNow--;
  if (holdMs > 0 && now() - started < holdMs) openStream();
  else if (finished === opened && ramped === streams) finish();
}

/** Occurrences of `marker` in `text` that end past `from` (those before were counted with the previous piece). */
function count(text, marker, from) {
  let n = 0;
  for (let at = text.indexOf(marker); at !== -1; at = text.indexOf(marker, at + 1)) if (at + marker.length > from) n++;
  return n;
}

function openStream() {
  const stream = { sent: now(), last: null, contents: 0, ended: false, carry: '', done: false };
  opened++;
  openNow++;
  openMax = Math.max(openMax, openNow);
  const request = http.request(target, { method: 'POST', headers, agent }, (response) => {
    headersMs.push(now() - stream.sent);
    if (response.statusCode !== 200) {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (piece) => {
        if (text.length < 300) text += piece;
      });
      response.on('end', () => fail(stream, `HTTP ${response.statusCode}`, text.slice(0, 200)));
      response.on('error', () => fail(stream, `HTTP ${response.statusCode}`, text.slice(0, 200)));
      return;
    }
    response.setEncoding('latin1');
    response.on('data', (piece) => {
      const at = now();
      const text = stream.carry + piece;
      const from = stream.carry.length;
      const found = count(text, CONTENT, from);
      if (found > 0) {
        if (stream.last === null) firstChunkMs.push(at - stream.sent);
        else noteGap(at - stream.last, at - started);
        stream.last = at;
        stream.contents += found;
        contentChunks += found;
      }
      if (!stream.ended && count(text, END, from) > 0) stream.ended = true;
      stream.carry = text.slice(-CARRY);
    });
    response.on('end', () => {
      if (!stream.ended) fail(stream, 'ended before its end event', `${stream.contents} content chunks`);
      else if (stream.contents !== chunks) fail(stream, 'wrong number of content chunks', `${stream.contents} of ${chunks}`);
      else succeed(stream);
    });
    response.on('error', (error) => fail(stream, 'response error', error.code ?? error.message));
    response.on('close', () => fail(stream, 'closed before its end', `${stream.contents} content chunks`)); // after `end`, a no-op
  });
  request.on('error', (error) => fail(stream, 'request error', error.code ?? error.message));
  request.end(body);
  live.add(request);
  request.on('close', () => live.delete(request));
}

const live = new Set();
let started = 0;
let ended = 0;
let cpuAtStart = null;

function percentiles(values, length = values.length) {
  const sorted = Float64Array.from(values.subarray ? values.subarray(0, length) : values).sort();
  const at = (p) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : null);
  const round = (x) => (x === null ? null : Math.round(x * 1000) / 1000);
  return { count: sorted.length, p50: round(at(50)), p99: round(at(99)), p999: round(at(99.9)), max: round(sorted.at(-1) ?? null) };
}

/** The gaps' percentiles by the phase of the run in which each ended. */
function gapsByPhase() {
  const steadyEnd = Math.max(holdMs, spec.streamSeconds * 1000);
  const phases = { ramp: [0, rampMs], steady: [rampMs, steadyEnd], ending: [steadyEnd, Infinity] };
  return Object.fromEntries(
    Object.entries(phases).map(([name, [from, to]]) => {
      const inPhase = [];
      for (let i = 0; i < gapCount; i++) if (gapAt[i] >= from && gapAt[i] < to) inPhase.push(gaps[i]);
      return [name, percentiles(inPhase)];
    }),
  );
}

let finishing = false;
function finish() {
  if (finishing) return;
  finishing = true;
  ended = now();
  process.stdout.write('ENDED\n');
  clearInterval(progress);
  clearTimeout(deadline);
  const cpu = process.cpuUsage(cpuAtStart);
  const result = {
    streams,
    opened,
    completed,
    errors: Object.values(errors).reduce((a, b) => a + b, 0),
    error_kinds: errors,
    error_examples: examples,
    content_chunks: contentChunks,
    open_max: openMax,
    window_s: Math.round(ended - started) / 1000,
    gaps_ms: percentiles(gaps, gapCount),
    gaps_by_phase_ms: gapsByPhase(),
    headers_ms: percentiles(headersMs),
    first_chunk_ms: percentiles(firstChunkMs),
    client_cpu_s: (cpu.user + cpu.system) / 1e6, // from the first call to the last stream's end
    client_loop_delay_ms: { p99: loop.percentile(99) / 1e6, max: loop.max / 1e6 },
  };
  process.stdout.write(JSON.stringify(result) + '\n');
  process.exit(0);
}

const progress = setInterval(() => {
  process.stderr.write(`[client] ${opened} opened, ${openNow} open, ${completed} complete, ${finished - completed} errors\n`);
}, 5000);
// Streams still open by then are cut off (and counted as errors).
const deadline = setTimeout(() => {
  for (const request of live) request.destroy(new Error('the run timed out'));
}, spec.timeoutSeconds * 1000);

// The ramp: stream i goes out at i × ramp / streams; one interval opens every stream that is due.
started = now();
cpuAtStart = process.cpuUsage();
process.stdout.write('STARTED\n');
const spacing = rampMs / streams;
let ramped = 0; // streams the ramp opened (a hold opens more as they end)
const opener = setInterval(() => {
  const due = Math.min(streams, Math.floor((now() - started) / spacing) + 1);
  for (; ramped < due; ramped++) openStream();
  if (ramped === streams) clearInterval(opener);
}, 1);
