import { Writable } from 'node:stream';
import { afterAll, describe, expect, test } from 'vitest';
import { backoffDelay, createBackoff, createFailureBackoff } from '../../src/internal/failureBackoff.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { sleep } from '../../src/internal/shutdown.ts';
import { createStore } from '../../src/store/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { startFreezableProxy } from '../helpers/freezableProxy.ts';
import { delivery } from '../helpers/delivery.ts';

function capture() {
  const lines: { level: string; msg: string; failed_attempts?: number; retry_in_ms?: number }[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { lines, logger: createLogger({ level: 'info', destination }) };
}

describe('backoffDelay and createBackoff', () => {
  test('waits start at initialMs and double per consecutive failure up to maxMs; a success starts over', () => {
    expect([1, 2, 3, 4, 5, 6, 7].map((failures) => backoffDelay(failures, { initialMs: 1_000, maxMs: 30_000 }))).toEqual([
      1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000,
    ]);
    const backoff = createBackoff({ initialMs: 250, maxMs: 1_000 });
    expect([backoff.failed(), backoff.failed(), backoff.failed(), backoff.failed()]).toEqual([250, 500, 1_000, 1_000]);
    expect(backoff.failures).toBe(4);
    backoff.succeeded();
    expect(backoff.failures).toBe(0);
    expect(backoff.failed()).toBe(250);
  });
});

describe('createFailureBackoff', () => {
  test('waits double up to the cap; one error line per outage, one info line with the count on recovery', async () => {
    const { lines, logger } = capture();
    const backoff = createFailureBackoff({ logger, what: 'Thing', initialMs: 100, maxMs: 500 });
    backoff.succeeded();
    expect(lines).toEqual([]);
    expect([1, 2, 3, 4, 5].map(() => backoff.failed(new Error('down')))).toEqual([100, 200, 400, 500, 500]);
    backoff.succeeded();
    backoff.succeeded();
    await sleep(20); // pino writes asynchronously
    expect(lines.map((line) => [line.level, line.msg, line.failed_attempts])).toEqual([
      ['error', 'Thing failed; retrying with backoff, logging again on recovery', undefined],
      ['info', 'Thing recovered', 5],
    ]);
    // A new outage starts again from the first wait.
    expect(backoff.failed(new Error('down again'))).toBe(100);
  });

  test('a different error during the failures is logged, and a lasting failure is logged again now and then', async () => {
    const { lines, logger } = capture();
    const backoff = createFailureBackoff({ logger, what: 'Thing', initialMs: 10, maxMs: 10, remindMs: 50 });
    backoff.failed(new Error('database down'));
    backoff.failed(new Error('database down'));
    backoff.failed(new TypeError('a bug in a row')); // another problem: said at once
    backoff.failed(new TypeError('a bug in a row'));
    await sleep(60);
    backoff.failed(new TypeError('a bug in a row')); // still failing after remindMs: said again
    await sleep(20);
    expect(lines.map((line) => line.msg)).toEqual([
      'Thing failed; retrying with backoff, logging again on recovery',
      'Thing still failing',
      'Thing still failing',
    ]);
  });
});

const db = useTestDatabase('failure_backoff_loops');
const cleanup: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const step of cleanup.reverse()) await step();
});

test('the webhook delivery loop, database down: one error line and one listener warning, not one per pass; one recovery line', async () => {
  const proxy = await startFreezableProxy(db.connectionString);
  cleanup.push(() => proxy.close());
  const store = createStore({ connectionString: proxy.connectionString, max: 2 });
  cleanup.push(() => store.close());
  const { lines, logger } = capture();
  const worker = delivery(store, { logger, pollIntervalMs: 20 });
  await worker.start();
  cleanup.push(() => worker.stop());
  const deliveryLines = () => lines.filter((line) => /^Delivery/.test(line.msg));
  await sleep(200);
  proxy.down();
  await sleep(2_500);
  // The old loop logged an error (and a listener warning) every second of the outage.
  // One line when it starts (plus one per change of error, e.g. refused then reset), not one a second.
  const errors = deliveryLines().filter((line) => line.level === 'error');
  expect(errors[0]?.msg).toBe('Delivery loop failed; retrying with backoff, logging again on recovery');
  expect(errors.length).toBeLessThanOrEqual(2);
  expect(deliveryLines().filter((line) => /listener could not connect/.test(line.msg)).length).toBeLessThanOrEqual(1);
  proxy.up();
  await expect.poll(() => deliveryLines().some((line) => line.msg === 'Delivery loop recovered'), { timeout: 35_000 }).toBe(true);
}, 60_000);
