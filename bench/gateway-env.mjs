// How the bench scripts start the gateway: as `npm start` and the Docker image do, with glibc's
// allocator tuned (docs/operations.md "Memory"; test/malloc-tuning.spec.ts keeps the three in step).
export const GLIBC_TUNABLES = 'glibc.malloc.arena_max=2:glibc.malloc.mmap_threshold=131072';

/** The gateway's environment on top of the caller's: the allocator tuning unless set already. */
export function gatewayEnv(env) {
  return { GLIBC_TUNABLES: process.env.GLIBC_TUNABLES ?? GLIBC_TUNABLES, ...env };
}
