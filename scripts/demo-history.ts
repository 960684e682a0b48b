import type { INestApplication } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import type { GatewayConfig } from '../src/config/gateway-config';
import { recordCostOf } from '../src/metering/pricing';
import { priceSheetOf } from '../src/metering/price-sheets';
import type { UsageFigures } from '../src/metering/usage-figures';
import { UsageWriter } from '../src/metering/usage-writer.service';

const DAY_MS = 86_400_000;
const DAYS = 7;

/** What each demo owner's keys call, and how busy each is on a day. */
const TRAFFIC: Record<string, { models: string[]; callsPerDay: number }> = {
  'demo-team': { models: ['demo-chat', 'demo-messages'], callsPerDay: 60 },
  research: { models: ['demo-chat', 'demo-embed'], callsPerDay: 35 },
  alice: { models: ['demo-messages'], callsPerDay: 15 },
};

/** A small seeded generator: the same sample every run. */
function generator(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state / 2_147_483_648;
  };
}

function figuresOf(model: string, random: () => number): UsageFigures {
  const input = 150 + Math.floor(random() * 1_800);
  if (model === 'demo-embed') return { input_tokens: input };
  return { input_tokens: input, output_tokens: 40 + Math.floor(random() * 700) };
}

/**
 * A week of sample calls, so the demo console's charts are not empty: records written through
 * the usage writer (owners' spend stays the sum of their records), priced by the catalog, with a
 * few failures, the last few hours included. Only for the demo's in-memory database.
 */
export async function addSampleHistory(app: INestApplication, config: GatewayConfig, now = Date.now()): Promise<number> {
  const random = generator(20_261_127);
  const keys: Array<{ id: string; owner_id: string }> = await app.get(DataSource).query('SELECT id, owner_id FROM api_key ORDER BY id');
  const writer = app.get(UsageWriter);
  let written = 0;
  for (const key of keys) {
    const traffic = TRAFFIC[key.owner_id];
    if (!traffic) continue;
    for (let day = DAYS - 1; day >= 0; day -= 1) {
      // Busier towards today, and no call in the future.
      const calls = Math.round(traffic.callsPerDay * (0.6 + random() * 0.6) * (1 + (DAYS - day) / DAYS));
      for (let index = 0; index < calls; index += 1) {
        const startedAt = now - day * DAY_MS - Math.floor(random() * (day === 0 ? 3 * 3_600_000 : DAY_MS));
        const model = traffic.models[Math.floor(random() * traffic.models.length)]!;
        const failed = random() < 0.03;
        const usage = failed ? undefined : figuresOf(model, random);
        const modelConfig = config.models.find((candidate) => candidate.id === model)!;
        writer.enqueue({
          requestId: randomUUID(),
          clientRequestId: null,
          keyId: key.id,
          ownerId: key.owner_id,
          model,
          interface: modelConfig.interfaces[0]!,
          line: 'simulator',
          translatedTo: null,
          status: failed ? 502 : 200,
          errorCode: failed ? 'upstream_failed' : null,
          stream: random() < 0.5,
          usage,
          costNano: recordCostOf(usage, modelConfig, null),
          priceSheet: priceSheetOf(modelConfig),
          priceBasis: null,
          startedAt: new Date(startedAt),
          durationMs: 200 + Math.floor(random() * 2_000),
          upstreamHeadersMs: 80 + Math.floor(random() * 400),
          tags: null,
          endUser: null,
          linesTried: null,
        });
        written += 1;
      }
    }
  }
  await writer.flush();
  return written;
}
