import { expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { runReceiverOutage } from '../../bench/chaos/lib/receiverOutageRun.ts';

// The short version of bench/chaos/receiverOutage.ts (docs/reliability.md "Receiver outage"):
// the same simulated week, two delivery workers on the injected clock and the same audit, one
// event every fourth hour instead of ten an hour.
const db = useTestDatabase('chaos_receiver_outage');

test('a day-long receiver outage: every event arrives on schedule once it is back; 5 days of failures disable, 410 disables, a re-enabled endpoint replays each missed event once', {
  timeout: 240_000,
}, async () => {
  const report = await runReceiverOutage({ databaseUrl: db.connectionString, eventsPerHour: 0.25 });
  expect(report.defects).toEqual([]);
  expect(report.a.backlogAtReturn).toBeGreaterThan(4);
  expect(report.b.disabledAfterDays).toBeGreaterThanOrEqual(5);
  expect(report.b.replayed).toBeGreaterThan(0);
  expect(report.c.reason).toMatch(/410/);
});
