#!/usr/bin/env node
// The floor a Node gateway is measured against: node:http in, undici Pool out, nothing else.
// For each POST it reads the body, parses it, rewrites `model` (to "bare/<model>"), forwards
// it to the same path on the upstream and writes the answer back as it arrives (SSE events
// are passed on one by one). No auth, no metering, no logging, no translation.
//
// Usage: UPSTREAM_URL=http://127.0.0.1:PORT node bare-proxy.mjs [--port N] [--connections N]
// Port 0 (the default) takes a free port; the first line on stdout is `listening <port>`.
// --connections: upstream sockets (256; the gateway has no cap by default, LINE_CONNECTIONS 0); calls past
// them wait for one.
import http from 'node:http';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';

const { values } = parseArgs({ options: { port: { type: 'string', default: '0' }, connections: { type: 'string', default: '256' } } });
const upstream = new Pool(process.env.UPSTREAM_URL ?? 'http://127.0.0.1:18080', {
  connections: Math.max(1, Number(values.connections) || 256),
  keepAliveTimeout: 60_000,
  headersTimeout: 0,
  bodyTimeout: 0,
});
const SKIP = new Set(['connection', 'keep-alive', 'transfer-encoding']);

function reject(res, status, message) {
  if (res.headersSent) return void res.destroy();
  const text = JSON.stringify({ error: { type: 'bare_proxy_error', message } });
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

const server = http.createServer((req, res) => {
  if (req.method !== 'POST') {
    req.resume();
    return reject(res, 405, 'POST only');
  }
  const parts = [];
  req.on('data', (part) => parts.push(part));
  req.on('end', () => {
    let body;
    try {
      body = JSON.parse(parts.length === 1 ? parts[0] : Buffer.concat(parts));
    } catch {
      return reject(res, 400, 'body is not JSON');
    }
    if (body === null || typeof body !== 'object' || Array.isArray(body)) return reject(res, 400, 'body is not a JSON object');
    body.model = `bare/${body.model}`;
    const text = JSON.stringify(body);
    const headers = { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) };
    upstream
      .stream({ path: req.url, method: 'POST', headers, body: text }, ({ statusCode, headers: answer }) => {
        for (const name in answer) if (!SKIP.has(name)) res.setHeader(name, answer[name]);
        res.writeHead(statusCode);
        return res; // undici writes the upstream body into the client response, honouring backpressure
      })
      .catch((error) => reject(res, 502, `upstream: ${error.code ?? error.message}`));
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(values.port), '127.0.0.1', () => console.log(`listening ${server.address().port}`));
process.on('SIGTERM', () => process.exit(0));
