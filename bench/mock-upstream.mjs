#!/usr/bin/env node
// Simulated model vendor for `npm run bench`: plain node:http, answers from string templates.
//
//   POST /v1/chat/completions  chat-completions JSON, or SSE when "stream": true (N content
//                              chunks; with stream_options.include_usage, `"usage":null` in
//                              each of them and a usage chunk before [DONE])
//   POST /v1/messages          messages JSON, or SSE: message_start, content_block_start,
//                              N content_block_delta, content_block_stop, message_delta (usage),
//                              message_stop
//   POST /v1/images/edits      images format A: any body (multipart or JSON) is drained and
//                              answered with one small image and token usage
//   GET  /stats                requests received, per caller key (Authorization bearer or
//                              x-api-key, "none" without) and per model
//   GET  /pacing               with --chunk-ms: how late the paced chunks went out (ms after
//                              they were due: p50, p99, max) since the previous /pacing
//
// Usage: node mock-upstream.mjs [--port N] [--chunks N] [--chunk-ms MS]. Port 0 (the default)
// takes a free port; the first line on stdout is `listening <port>`.
//
// --chunk-ms 0 (the default) writes a stream's events as fast as the loop turns (one write per
// event, setImmediate in between). --chunk-ms MS paces them like a model generating tokens: the
// events before the first content chunk and that chunk go out with the headers, then one content
// chunk every MS ms, the closing events with the last one (one write per content chunk). A
// stream of --chunks 120 --chunk-ms 250 lasts 29.75 s (bench/long-streams.mjs). One shared
// ticker writes every stream whose chunk is due, instead of a timer per stream.
import http from 'node:http';
import { createHistogram } from 'node:perf_hooks';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: { port: { type: 'string', default: '0' }, chunks: { type: 'string', default: '20' }, 'chunk-ms': { type: 'string', default: '0' } },
});
const CHUNKS = Math.max(1, Number(values.chunks));
const CHUNK_MS = Math.max(0, Number(values['chunk-ms']) || 0);

const stats = { requests: 0, by_key: {}, by_model: {}, by_path: {}, aborted_streams: 0, paced_streams_open: 0, paced_streams_open_max: 0 };
const bump = (table, key) => {
  table[key] = (table[key] ?? 0) + 1;
};
let serial = 0;

function callerKey(headers) {
  const bearer = headers.authorization;
  if (typeof bearer === 'string') return bearer.startsWith('Bearer ') ? bearer.slice(7) : bearer;
  return headers['x-api-key'] ?? 'none';
}

function json(res, status, text) {
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

// One socket write per event, yielding to the event loop in between, like tokens arriving.
// `lead`: how many events come before the first content chunk; `trail`: after the last one.
function sse(res, events, lead, trail) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  if (CHUNK_MS > 0) return paced(res, events, lead, trail);
  let next = 0;
  const pump = () => {
    if (res.destroyed) {
      stats.aborted_streams++;
      return;
    }
    if (next === events.length) {
      res.end();
      return;
    }
    res.write(events[next++]);
    setImmediate(pump);
  };
  pump();
}

function chat(res, body, promptTokens) {
  const model = JSON.stringify(String(body.model));
  const id = `chatcmpl-${++serial}`;
  const created = Math.floor(Date.now() / 1000);
  if (body.stream !== true) {
    json(
      res,
      200,
      `{"id":"${id}","object":"chat.completion","created":${created},"model":${model},` +
        `"choices":[{"index":0,"message":{"role":"assistant","content":"ok, simulated answer"},"finish_reason":"stop"}],` +
        `"usage":{"prompt_tokens":${promptTokens},"completion_tokens":3,"total_tokens":${promptTokens + 3}}}`,
    );
    return;
  }
  const prefix = `data: {"id":"${id}","object":"chat.completion.chunk","created":${created},"model":${model},"choices":`;
  const events = [];
  // With include_usage each content chunk carries `"usage":null` before the usage chunk, as the API documents.
  const includeUsage = body.stream_options?.include_usage === true;
  const nullUsage = includeUsage ? ',"usage":null' : '';
  for (let i = 0; i < CHUNKS; i++) {
    const delta = i === 0 ? '{"role":"assistant","content":"tok "}' : '{"content":"tok "}';
    events.push(`${prefix}[{"index":0,"delta":${delta},"finish_reason":${i === CHUNKS - 1 ? '"stop"' : 'null'}}]${nullUsage}}\n\n`);
  }
  if (includeUsage) {
    events.push(`${prefix}[],"usage":{"prompt_tokens":${promptTokens},"completion_tokens":${CHUNKS},"total_tokens":${promptTokens + CHUNKS}}}\n\n`);
  }
  events.push('data: [DONE]\n\n');
  sse(res, events, 0, events.length - CHUNKS);
}

function messages(res, body, promptTokens) {
  const model = JSON.stringify(String(body.model));
  const id = `msg_${++serial}`;
  if (body.stream !== true) {
    json(
      res,
      200,
      `{"id":"${id}","type":"message","role":"assistant","model":${model},` +
        `"content":[{"type":"text","text":"ok, simulated answer"}],"stop_reason":"end_turn","stop_sequence":null,` +
        `"usage":{"input_tokens":${promptTokens},"output_tokens":3}}`,
    );
    return;
  }
  const event = (name, data) => `event: ${name}\ndata: ${data}\n\n`;
  const delta = event('content_block_delta', '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"tok "}}');
  const events = [
    event(
      'message_start',
      `{"type":"message_start","message":{"id":"${id}","type":"message","role":"assistant","model":${model},` +
        `"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":${promptTokens},"output_tokens":1}}}`,
    ),
    event('content_block_start', '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}'),
  ];
  for (let i = 0; i < CHUNKS; i++) events.push(delta);
  events.push(
    event('content_block_stop', '{"type":"content_block_stop","index":0}'),
    event('message_delta', `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":${CHUNKS}}}`),
    event('message_stop', '{"type":"message_stop"}'),
  );
  sse(res, events, 2, 3);
}

// ------------------------------------------------------------------ paced streams (--chunk-ms)
// Every open paced stream: its remaining writes (content chunks, the first and last with the
// events around them) and when the next one is due. One interval, running only while streams are
// open, writes each stream whose time has come: a few thousand streams cost one timer, not a
// few thousand.
const TICK_MS = Math.max(1, Math.min(5, CHUNK_MS));
const open = new Set();
let ticker = null;
const lateness = createHistogram(); // µs after its time each paced chunk went out (GET /pacing)

function paced(res, events, lead, trail) {
  if (lead + CHUNKS + trail !== events.length) throw new Error('paced stream: lead + chunks + trail must be every event');
  const stream = { res, events, lead, next: 0, due: performance.now() };
  open.add(stream);
  stats.paced_streams_open = open.size;
  stats.paced_streams_open_max = Math.max(stats.paced_streams_open_max, open.size);
  writeDue(stream, stream.due); // the first content chunk goes out with the headers
  ticker ??= setInterval(tick, TICK_MS);
}

/** Writes the stream's next content chunk when it is due; ends and forgets the stream after its last. */
function writeDue(stream, now) {
  if (stream.res.destroyed) {
    stats.aborted_streams++;
    return close(stream);
  }
  if (stream.due > now) return;
  const { events, lead, next } = stream;
  if (next > 0) lateness.record(Math.max(1, Math.round((now - stream.due) * 1000)));
  const last = next === CHUNKS - 1;
  // the first chunk carries the events before it, the last one those after it
  stream.res.write(next === 0 || last ? events.slice(next === 0 ? 0 : lead + next, last ? events.length : lead + 1).join('') : events[lead + next]);
  stream.next++;
  stream.due += CHUNK_MS;
  if (last) {
    stream.res.end();
    close(stream);
  }
}

function close(stream) {
  open.delete(stream);
  stats.paced_streams_open = open.size;
  if (open.size === 0 && ticker) {
    clearInterval(ticker);
    ticker = null;
  }
}

function tick() {
  const now = performance.now();
  for (const stream of open) writeDue(stream, now);
}

const HANDLERS = { '/v1/chat/completions': chat, '/v1/messages': messages };

// A 1x1 PNG: the answer stays small so that the measured memory is the request body's.
const PIXEL = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=';

/** Image edits: the body is counted, never parsed (a form is not JSON). */
function imageEdit(req, res) {
  let bytes = 0;
  req.on('data', (part) => {
    bytes += part.length;
  });
  req.on('end', () => {
    const imageTokens = Math.max(1, bytes >> 12);
    json(
      res,
      200,
      `{"created":${Math.floor(Date.now() / 1000)},"data":[{"b64_json":"${PIXEL}"}],` +
        `"usage":{"input_tokens":${imageTokens + 8},"input_tokens_details":{"text_tokens":8,"image_tokens":${imageTokens}},` +
        `"output_tokens":272,"output_tokens_details":{"text_tokens":0,"image_tokens":272},"total_tokens":${imageTokens + 280}}}`,
    );
  });
}

const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/stats') return json(res, 200, JSON.stringify(stats));
  if (req.method === 'GET' && req.url === '/pacing') {
    const ms = (us) => (lateness.count ? Math.round(us) / 1000 : null);
    const late = { chunks: lateness.count, p50_ms: ms(lateness.percentile(50)), p99_ms: ms(lateness.percentile(99)), max_ms: ms(lateness.max) };
    lateness.reset();
    return json(res, 200, JSON.stringify(late));
  }
  if (req.method === 'POST' && req.url === '/v1/images/edits') {
    stats.requests++;
    bump(stats.by_key, callerKey(req.headers));
    bump(stats.by_path, req.url);
    return imageEdit(req, res);
  }
  const handler = req.method === 'POST' ? HANDLERS[req.url] : undefined;
  if (!handler) {
    req.resume();
    return json(res, 404, `{"error":{"type":"not_found","message":"no route ${req.method} ${req.url}"}}`);
  }
  // Counted on arrival, so a call whose client goes away mid-body still counts as received.
  stats.requests++;
  bump(stats.by_key, callerKey(req.headers));
  bump(stats.by_path, req.url);
  const parts = [];
  req.on('data', (part) => parts.push(part));
  req.on('end', () => {
    const raw = parts.length === 1 ? parts[0] : Buffer.concat(parts);
    let body;
    try {
      body = JSON.parse(raw);
    } catch {
      return json(res, 400, '{"error":{"type":"invalid_request_error","message":"body is not JSON"}}');
    }
    bump(stats.by_model, String(body.model));
    handler(res, body, Math.max(1, raw.length >> 2));
  });
});
server.keepAliveTimeout = 60_000;
// A vendor takes thousands of new connections a second: a deeper accept queue than Node's 511.
server.listen(Number(values.port), '127.0.0.1', 4096, () => console.log(`listening ${server.address().port}`));
process.on('SIGTERM', () => process.exit(0));
