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
import { reportDefects, runOptions } from './lib/cli.ts';
import { runDbPressure } from './lib/dbPressureRun.ts';

const options = runOptions({ hold: 30, interval: 100, 'pg-port': 54391, 'api-timeout': 2000 });
const holdMs = options.hold * 1000;
const apiDbTimeoutMs = options['api-timeout'];
const report = await runDbPressure({
  pgPort: options['pg-port'],
  holdMs: { readOnly: holdMs, connections: holdMs, lock: holdMs },
  gapMs: 10_000,
  intervalMs: options.interval,
  apiDbTimeoutMs,
  // The API's own waits: a statement (SVC_API_DB_TIMEOUT_MS), a connection (3 s), the per-IP
  // limiter's (1 s); twice that leaves room for a loaded 2-core machine.
  answerBoundMs: 2 * (apiDbTimeoutMs + 4_000),
  settleMs: 120_000,
  log: (line) => console.log(line),
});
process.exit(reportDefects(report) ? 0 : 1);
