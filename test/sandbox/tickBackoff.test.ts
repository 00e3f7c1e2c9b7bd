import { Writable } from 'node:stream';
import { afterAll, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { startFreezableProxy } from '../helpers/freezableProxy.ts';
import { createStore } from '../../src/store/index.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { loadChains } from '../../src/internal/chains.ts';
import { createEngine } from '../../src/engine/index.ts';
import { createSandbox } from '../../src/sandbox/index.ts';
import { sleep } from '../../src/internal/shutdown.ts';

const db = useTestDatabase('sandbox_tick_backoff');
const cleanup: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const step of cleanup.reverse()) await step();
});

test('while the database is down the sandbox tick backs off and logs the outage once, then once on recovery with the count', async () => {
  const proxy = await startFreezableProxy(db.connectionString);
  cleanup.push(() => proxy.close());
  const store = createStore({ connectionString: proxy.connectionString, max: 2 });
  cleanup.push(() => store.close());
  const lines: { level: string; msg: string; failed_attempts?: number }[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  const logger = createLogger({ level: 'info', destination });
  const engine = createEngine({ store, logger, metrics: createMetricsRegistry({ defaultMetrics: false }), config: { monitorWindowSeconds: 3600 } });
  const sandbox = createSandbox({
    store,
    logger,
    chains: loadChains(),
    blockMs: 10,
    backoff: { initialMs: 20, maxMs: 160 },
    reconcile: async (change) => void (await engine.reconcile(change)),
  });
  const stop = new AbortController();
  const running = sandbox.run(stop.signal);
  cleanup.push(async () => {
    stop.abort();
    await running;
  });
  const sandboxLines = () => lines.filter((line) => /^Sandbox tick/.test(line.msg));

  await sleep(200);
  expect(sandboxLines()).toEqual([]);

  proxy.down();
  const before = proxy.accepted;
  await sleep(1_500);
  // Every block (10 ms) would be ~150 attempts; backing off 20, 40, 80, then every 160 ms is ~12.
  expect(proxy.accepted - before).toBeLessThan(20);
  // One line when it starts (and one more only if the error changes, e.g. cut then refused).
  const errors = sandboxLines();
  expect(errors[0]).toMatchObject({ level: 'error', msg: 'Sandbox tick failed; retrying with backoff, logging again on recovery' });
  expect(errors.length).toBeLessThanOrEqual(2);
  expect(errors.every((line) => line.level === 'error')).toBe(true);

  proxy.up();
  await expect.poll(() => sandboxLines().at(-1)?.msg, { timeout: 3_000 }).toBe('Sandbox tick recovered');
  const recovered = sandboxLines().at(-1)!;
  expect(recovered).toMatchObject({ level: 'info', msg: 'Sandbox tick recovered' });
  expect(recovered.failed_attempts).toBeGreaterThanOrEqual(5);
  const logged = sandboxLines().length;
  await sleep(200);
  expect(sandboxLines()).toHaveLength(logged);
});
