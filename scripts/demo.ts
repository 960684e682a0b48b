/**
 * `npm run demo`: the gateway on the embedded database in front of the built-in upstream
 * simulator, with a demo key, and a curl line that works. Ctrl-C stops both.
 */
import 'reflect-metadata';
import { createGatewayApp } from '../src/app.factory';
import { loadGatewayConfig } from '../src/config/config.loader';
import { defaultSettings } from '../src/config/gateway-options';
import { installGracefulShutdown } from '../src/common/graceful-shutdown';
import { UpstreamSimulator } from '../test/simulator/upstream-simulator';
import { addSampleHistory } from './demo-history';

const DEMO_KEY = 'gk-demo-0000000000000001';
const SIMULATOR_KEY = 'simulator-vendor-key';

function demoConfig(simulatorUrl: string): string {
  return `
upstreams:
  - id: simulator
    base_url: ${simulatorUrl}
    api_key: \${SIMULATOR_KEY}
models:
  - id: demo-chat
    upstream_model: simulated-chat-1
    interfaces: [chat_completions, responses]
    lines: [simulator]
    capabilities: { image_input: true }
    max_tokens: 16384
    prices: { input_tokens: 2.5, output_tokens: 10 }
  - id: demo-messages
    upstream_model: simulated-messages-1
    interfaces: [messages]
    lines: [simulator]
    max_tokens: 8192
    prices: { input_tokens: 3, output_tokens: 15 }
  - id: demo-embed
    upstream_model: simulated-embed-1
    interfaces: [embeddings]
    lines: [simulator]
    prices: { input_tokens: 0.02 }
  - id: demo-video
    upstream_model: simulated-video-1
    interfaces: [video_c]
    lines: [simulator]
    prices: { output_seconds: 0.05, input_image_count: 0.01 }
  - id: demo-image
    upstream_model: simulated-image-1
    interfaces: [images_a]
    lines: [simulator]
    prices: { input_text_tokens: 5, input_image_tokens: 10, output_image_tokens: 40 }
  - id: demo-image-c
    upstream_model: simulated-image-c-1
    interfaces: [images_c]
    lines: [simulator]
    prices: { input_tokens: 0.3, output_text_tokens: 2.5, output_image_tokens: 30 }
  - id: demo-speech
    upstream_model: simulated-speech-1
    interfaces: [speech_c]
    lines: [simulator]
    prices: { input_characters: 100 }
owners:
  - id: demo-team
    kind: project
    budget: 10
  - id: research
    kind: project
    budget: 25
  - id: alice
    kind: member
keys:
  - key: ${DEMO_KEY}
    owner: demo-team
    models: ["*"]
  - key: gk-demo-research-00000001
    owner: research
    models: [demo-chat, demo-embed]
  - key: gk-demo-alice-0000000001
    owner: alice
    models: ["*"]
`;
}

async function main(): Promise<void> {
  // Simulated video tasks run for 3 s and succeed 3 s later, so a demo user sees them settle.
  const simulator = new UpstreamSimulator({ apiKey: SIMULATOR_KEY, videoAutoAdvanceMs: 3_000 });
  const simulatorUrl = await simulator.start(Number(process.env.SIMULATOR_PORT ?? 0));
  const config = loadGatewayConfig(demoConfig(simulatorUrl), { SIMULATOR_KEY });
  const adminToken = process.env.ADMIN_TOKEN ?? 'demo-admin-token';
  const dataDir = process.env.DATA_DIR ?? 'memory';
  const app = await createGatewayApp({ config, database: { dataDir }, adminToken, ...defaultSettings(process.env) }, { logger: ['error', 'warn'] });
  installGracefulShutdown(app, 5_000);
  const port = Number(process.env.PORT ?? 8080);
  await app.listen(port, '127.0.0.1');
  // Sample calls only where nothing is kept: a DATA_DIR on disk holds real records alone.
  const sampled = dataDir === 'memory' ? await addSampleHistory(app, config) : 0;
  const base = `http://127.0.0.1:${port}`;
  const body = JSON.stringify({ model: 'demo-chat', messages: [{ role: 'user', content: 'Hello, gateway!' }] });
  const videoBody = JSON.stringify({ model: 'demo-video', duration: 6, content: [{ type: 'text', text: 'A paper boat on a pond' }] });
  const imageBody = JSON.stringify({ model: 'demo-image', prompt: 'A lighthouse at dusk' });
  const generateContentBody = JSON.stringify({
    contents: [{ parts: [{ text: 'A lighthouse at dusk' }] }],
    generationConfig: { responseModalities: ['TEXT', 'IMAGE'] },
  });
  const speechBody = JSON.stringify({ model: 'demo-speech', text: 'Hello from the gateway.', voice_setting: { voice_id: 'male-qn-qingse' } });
  const messagesBody = JSON.stringify({ model: 'demo-chat', max_tokens: 256, messages: [{ role: 'user', content: 'Hello, translator!' }] });
  process.stdout.write(
    [
      '',
      `Model gateway demo on ${base} (upstream simulator at ${simulatorUrl}, embedded database)`,
      `Demo key:    ${DEMO_KEY}`,
      `Admin token: ${adminToken}`,
      `Console:     ${base}/console/   (sign in with the admin token${sampled > 0 ? `; ${sampled} sample calls of the last week fill its charts` : ''})`,
      '',
      'Try:',
      `  curl -s ${base}/v1/chat/completions -H 'Authorization: Bearer ${DEMO_KEY}' -H 'Content-Type: application/json' -d '${body}'`,
      `  curl -s ${base}/v1/models -H 'Authorization: Bearer ${DEMO_KEY}'`,
      `  curl -s ${base}/v1/messages -H 'Authorization: Bearer ${DEMO_KEY}' -H 'Content-Type: application/json' -d '${messagesBody}'   # translated to responses`,
      `  curl -s ${base}/vendor-c/v2/video_generation -H 'Authorization: Bearer ${DEMO_KEY}' -H 'Content-Type: application/json' -d '${videoBody}'   # then GET ${base}/vendor-c/v2/query/video_generation/<task_id>`,
      `  curl -s ${base}/v1/images/generations -H 'Authorization: Bearer ${DEMO_KEY}' -H 'Content-Type: application/json' -d '${imageBody}'`,
      `  curl -s ${base}/v1beta/models/demo-image-c:generateContent -H 'x-goog-api-key: ${DEMO_KEY}' -H 'Content-Type: application/json' -d '${generateContentBody}'`,
      `  curl -s ${base}/vendor-c/v1/t2a_v2 -H 'Authorization: Bearer ${DEMO_KEY}' -H 'Content-Type: application/json' -d '${speechBody}'`,
      `  curl -s ${base}/admin/owners/demo-team -H 'Authorization: Bearer ${adminToken}'`,
      '',
      'Ctrl-C stops the demo.',
      '',
    ].join('\n'),
  );
  // Ctrl-C: the gateway's shutdown hooks flush usage and end the process, simulator included.
}

void main().catch((error) => {
  process.stderr.write(`demo failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
