/**
 * A day-long receiver outage (issue 30, run 4), a week of delivery compressed with the delivery
 * stage's injectable clock: see bench/chaos/lib/receiverOutageRun.ts for the timeline and
 * outageAudit.ts for what is checked. Exits non-zero on any defect. Figures:
 * docs/reliability.md "Receiver outage".
 *
 *   npx tsx bench/chaos/receiverOutage.ts [--per-hour 10]
 *
 * DATABASE_URL to use an existing (empty) database; otherwise an embedded cluster in a temporary folder.
 */
import { migrate } from '../../src/store/migrate.ts';
import { benchDatabase } from '../lib.ts';
import { reportDefects, runOptions } from './lib/cli.ts';
import { runReceiverOutage } from './lib/receiverOutageRun.ts';

const options = runOptions({ 'per-hour': 10 });
const database = await benchDatabase('outage', 54393);
let passed = false;
try {
  await migrate({ connectionString: database.connectionString });
  const report = await runReceiverOutage({ databaseUrl: database.connectionString, eventsPerHour: options['per-hour'], log: (line) => console.log(line) });
  passed = reportDefects(report);
} finally {
  await database.close();
}
process.exit(passed ? 0 : 1);
