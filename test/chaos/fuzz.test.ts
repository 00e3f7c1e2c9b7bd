import { expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { runFuzz } from '../../bench/chaos/lib/fuzzRun.ts';

// The short version of bench/chaos/fuzz.ts (docs/reliability.md "Fuzzing"): the same generator,
// gateway process and audit, 900 requests instead of 100,000, a new seed on every run (printed on
// failure, so a failing run can be repeated with `--seed`).
const db = useTestDatabase('chaos_fuzz');

test('fuzzing from the OpenAPI document: no 5xx, every 4xx is {"error"}, the daemon process stays up', { timeout: 240_000 }, async () => {
  const seed = Date.now() % 1_000_000;
  const report = await runFuzz({ databaseUrl: db.connectionString, requests: 900, concurrency: 8, seed });
  expect(report.defects, `seed ${seed}`).toEqual([]);
  expect(report.sent).toBeGreaterThanOrEqual(880);
  expect(report.daemonExits).toBe(0);
  expect(report.operationsWith2xx).toBeGreaterThan(5);
});
