// How the bench scripts start the gateway: as `npm start` and the Docker image do, with glibc's
// allocator tuned (docs/operations.md "Memory"; test/malloc-tuning.spec.ts keeps the three in step).
export const GLIBC_TUNABLES = 'glibc.malloc.arena_max=2:glibc.malloc.mmap_threshold=131072';

/**
 * The gateway's environment on top of the caller's: the allocator tuning unless set already, and
 * $GATEWAY_NODE_OPTIONS, when set, as the gateway's NODE_OPTIONS: a V8 setting measured on the
 * gateway alone (NODE_OPTIONS itself would reach the bare proxy, the simulator and the client too).
 */
export function gatewayEnv(env) {
  const nodeOptions = process.env.GATEWAY_NODE_OPTIONS;
  return { GLIBC_TUNABLES: process.env.GLIBC_TUNABLES ?? GLIBC_TUNABLES, ...(nodeOptions ? { NODE_OPTIONS: nodeOptions } : {}), ...env };
}
