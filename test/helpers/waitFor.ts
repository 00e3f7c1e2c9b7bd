/**
 * Polls `check` every 25 ms until it returns a value other than undefined or false (that value is
 * returned), or fails naming `what` after `timeoutMs`. The one polling wait of the end-to-end
 * tests (anvil, litesvm, the daemon's roles): timeouts there are generous because the machines
 * are shared, and a test that waits too little is flaky, not faster.
 */
export async function waitFor<T>(check: () => Promise<T | undefined | false>, what: string, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
