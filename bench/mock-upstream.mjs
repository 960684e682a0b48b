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
//
// Usage: node mock-upstream.mjs [--port N] [--chunks N]. Port 0 (the default) takes a free
// port; the first line on stdout is `listening <port>`.
import http from 'node:http';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { port: { type: 'string', default: '0' }, chunks: { type: 'string', default: '20' } } });
const CHUNKS = Math.max(1, Number(values.chunks));

const stats = { requests: 0, by_key: {}, by_model: {}, by_path: {}, aborted_streams: 0 };
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
function sse(res, events) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
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
  sse(res, events);
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
  sse(res, events);
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
server.listen(Number(values.port), '127.0.0.1', () => console.log(`listening ${server.address().port}`));
process.on('SIGTERM', () => process.exit(0));
