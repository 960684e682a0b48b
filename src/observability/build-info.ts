import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The labels of `gateway_build_info`: what is running, as far as the process can know it without guessing. */
export interface BuildInfo {
  version: string;
  node_version: string;
  /** Only when the deployment says so (`GATEWAY_COMMIT`): a running image has no repository to ask. */
  commit?: string;
}

/** package.json of the checkout (running from src/ under ts-jest) or of the image (running from dist/src/). */
function packageFile(): string {
  const up = __filename.endsWith('.ts') ? ['..', '..'] : ['..', '..', '..'];
  return join(__dirname, ...up, 'package.json');
}

function packageVersion(): string {
  try {
    const version = (JSON.parse(readFileSync(packageFile(), 'utf8')) as { version?: unknown }).version;
    return typeof version === 'string' ? version : 'unknown';
  } catch {
    // A metric is no reason to refuse to start.
    return 'unknown';
  }
}

export function buildInfoOf(environment: NodeJS.ProcessEnv): BuildInfo {
  const info: BuildInfo = { version: packageVersion(), node_version: process.versions.node };
  const commit = environment.GATEWAY_COMMIT?.trim();
  if (commit) info.commit = commit;
  return info;
}
