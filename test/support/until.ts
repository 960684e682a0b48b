/** Polls `condition` every 20 ms until it holds; fails the test with `what` after `patienceMs`. */
export async function until(condition: () => boolean | Promise<boolean>, what: string, patienceMs = 10_000): Promise<void> {
  const deadline = Date.now() + patienceMs;
  while (Date.now() < deadline) {
    if (await condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`gave up waiting for ${what}`);
}
