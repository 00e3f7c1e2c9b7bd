import { expect, test } from 'vitest';
import { createStore, isDatabaseUnavailable, isUndefinedTable } from '../../src/store/index.ts';
import { isRetryableTransactionError } from '../../src/store/errors.ts';
import { useTestDatabase } from '../helpers/db.ts';

// The store is the one place that reads Postgres's and pg's codes and messages; these are the
// errors the real server and driver raise, classified there.
const db = useTestDatabase('store_errors');

test('a missing table is an undefined table, neither retryable nor an outage', async () => {
  const error = await db.store.query('SELECT 1 FROM no_such_table').catch((caught: unknown) => caught);
  expect(isUndefinedTable(error)).toBe(true);
  expect(isRetryableTransactionError(error)).toBe(false);
  expect(isDatabaseUnavailable(error)).toBe(false);
});

test('a deadlock is retryable as a whole transaction', async () => {
  const error = await db.store.query(`DO $$ BEGIN RAISE EXCEPTION 'simulated' USING ERRCODE = 'deadlock_detected'; END $$`).catch((caught: unknown) => caught);
  expect(isRetryableTransactionError(error)).toBe(true);
  expect(isUndefinedTable(error)).toBe(false);
});

test('a refused connection is an outage, whatever wraps it', async () => {
  const down = createStore({ connectionString: 'postgres://svc:svc@127.0.0.1:1/svc', max: 1 });
  try {
    const error = await down.query('SELECT 1').catch((caught: unknown) => caught);
    expect(isDatabaseUnavailable(error)).toBe(true);
    expect(isDatabaseUnavailable(new Error('request failed', { cause: error }))).toBe(true);
    expect(isUndefinedTable(error)).toBe(false);
  } finally {
    await down.close();
  }
});
