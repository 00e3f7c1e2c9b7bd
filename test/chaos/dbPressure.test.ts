import { expect, test } from 'vitest';
import { freePort } from '../helpers/anvil.ts';
import { runDbPressure } from '../../bench/chaos/lib/dbPressureRun.ts';

// The short version of bench/chaos/dbPressure.ts (docs/reliability.md "Database pressure"): the
// same gateway process, faults and audit, each fault held 2 s instead of 30. A cluster of its
// own: the faults (read-only, every connection taken) are cluster-wide.
test('database pressure: read-only, out of connections and a locked table give 503 + Retry-After, never 500 or a hang; nothing lost after', {
  timeout: 240_000,
}, async () => {
  const report = await runDbPressure({
    pgPort: await freePort(),
    holdMs: { readOnly: 2_000, connections: 2_000, lock: 3_000 },
    gapMs: 2_000,
    intervalMs: 50,
    apiDbTimeoutMs: 1_000,
    answerBoundMs: 10_000,
    settleMs: 60_000,
    log: (line) => console.log(new Date().toISOString(), line),
  });
  expect(report.defects).toEqual([]);
  for (const fault of report.faults) expect(fault.answered503, fault.name).toBeGreaterThan(0);
  expect(report.sessionsCreated).toBeGreaterThan(5);
  expect(report.eventsDelivered).toBe(report.events);
});
