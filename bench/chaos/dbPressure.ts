/**
 * Database pressure (issue 30, run 6): a gateway process under steady sandbox payments while its
 * Postgres is read-only, out of connections, then slow (a hot table locked), each in turn; the
 * audit checks every answer and every record (bench/chaos/lib/dbPressureRun.ts) and exits
 * non-zero on any defect. Figures: docs/reliability.md "Database pressure".
 *
 *   npx tsx bench/chaos/dbPressure.ts [--hold 30] [--interval 100] [--pg-port 54391]
 *
 * `--hold` is each fault's duration in seconds (the lock's too: 30 in the published run).
 */
import { parseArgs } from 'node:util';
import { runDbPressure } from './lib/dbPressureRun.ts';

const { values } = parseArgs({
  options: {
    hold: { type: 'string', default: '30' },
    interval: { type: 'string', default: '100' },
    'pg-port': { type: 'string', default: '54391' },
    'api-timeout': { type: 'string', default: '2000' },
  },
});
const holdMs = Number(values.hold) * 1000;
const apiDbTimeoutMs = Number(values['api-timeout']);
const report = await runDbPressure({
  pgPort: Number(values['pg-port']),
  holdMs: { readOnly: holdMs, connections: holdMs, lock: holdMs },
  gapMs: 10_000,
  intervalMs: Number(values.interval),
  apiDbTimeoutMs,
  // The API's own waits: a statement (SVC_API_DB_TIMEOUT_MS), a connection (3 s), the per-IP
  // limiter's (1 s); twice that leaves room for a loaded 2-core machine.
  answerBoundMs: 2 * (apiDbTimeoutMs + 4_000),
  settleMs: 120_000,
  log: (line) => console.log(line),
});
const { defects, ...figures } = report;
console.log(JSON.stringify(figures, null, 2));
if (defects.length > 0) {
  console.error(`AUDIT FAILED: ${defects.length} defects`);
  for (const defect of defects.slice(0, 50)) console.error(`  ${defect}`);
  process.exit(1);
}
console.log('AUDIT PASSED: no defect');
process.exit(0);
