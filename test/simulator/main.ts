import { UpstreamSimulator } from './upstream-simulator';

/**
 * Runs the upstream simulator on its own, for the demo and for manual checks:
 *   node dist/test/simulator/main.js --port 9100 [--host 127.0.0.1] [--api-key KEY] [--chunk-delay-ms 20]
 *     [--video-auto-advance-ms 3000]
 * Prints the base URL on stdout once listening. Video tasks advance on their own (running after
 * 3 s, succeeded after 6 s by default; 0 keeps them queued until cancelled).
 */

function optionValue(name: string): string | undefined {
  const index = process.argv.indexOf(`--${name}`);
  return index >= 0 ? process.argv[index + 1] : undefined;
}

function numberOption(name: string, fallback: number): number {
  const text = optionValue(name);
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 0) throw new Error(`--${name} must be a non-negative integer, got "${text}"`);
  return value;
}

async function main(): Promise<void> {
  const simulator = new UpstreamSimulator({
    apiKey: optionValue('api-key'),
    chunkDelayMs: numberOption('chunk-delay-ms', 0),
    videoAutoAdvanceMs: numberOption('video-auto-advance-ms', 3000) || undefined,
  });
  const url = await simulator.start(numberOption('port', 9100), optionValue('host') ?? '127.0.0.1');
  process.stdout.write(`${url}\n`);
  const shutdown = () => void simulator.stop().then(() => process.exit(0));
  process.once('SIGINT', shutdown);
  process.once('SIGTERM', shutdown);
}

main().catch((error: unknown) => {
  process.stderr.write(`upstream simulator: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
