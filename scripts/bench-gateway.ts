/**
 * Starts one gateway for a benchmark run: upstream = $UPSTREAM_URL (the bench mock), key
 * $BENCH_KEY (default `gk-bench-key`), models `gpt-4o-mini` (chat) and
 * `claude-3-5-haiku-latest` (messages), embedded database unless DATABASE_URL is set.
 */
import 'reflect-metadata';
import { createGatewayApp } from '../src/app.factory';
import { loadGatewayConfig } from '../src/config/config.loader';
import { databaseSettingsFromEnv } from '../src/database/data-source';
import { defaultSettings } from '../src/gateway-options';
import { installGracefulShutdown } from '../src/common/graceful-shutdown';

const yaml = `
upstreams:
  - id: mock
    base_url: \${UPSTREAM_URL}
    api_key: bench-vendor-key
models:
  - id: gpt-4o-mini
    upstream_model: gpt-4o-mini-upstream
    interfaces: [chat_completions]
    lines: [mock]
    prices: { input_tokens: 0.15, output_tokens: 0.6 }
  - id: claude-3-5-haiku-latest
    upstream_model: claude-3-5-haiku-upstream
    interfaces: [messages]
    lines: [mock]
    prices: { input_tokens: 0.8, output_tokens: 4 }
owners:
  - id: bench
    kind: project
    budget: 1000000
keys:
  - key: \${BENCH_KEY}
    owner: bench
    models: ["*"]
`;

async function main(): Promise<void> {
  const env: NodeJS.ProcessEnv = { ...process.env, BENCH_KEY: process.env.BENCH_KEY ?? 'gk-bench-key' };
  const config = loadGatewayConfig(yaml, env);
  const database = { ...databaseSettingsFromEnv(env), dataDir: env.DATA_DIR ?? 'memory' };
  const app = await createGatewayApp({ config, database, adminToken: env.ADMIN_TOKEN, ...defaultSettings(env) }, { logger: ['error', 'warn'] });
  installGracefulShutdown(app, 5_000);
  await app.listen(Number(env.PORT ?? 8080), '127.0.0.1');
}

void main().catch((error) => {
  process.stderr.write(`bench gateway failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
