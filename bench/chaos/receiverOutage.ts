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
import { parseArgs } from 'node:util';
import { migrate } from '../../src/store/migrate.ts';
import { benchDatabase } from '../lib.ts';
import { runReceiverOutage } from './lib/receiverOutageRun.ts';

const { values } = parseArgs({ options: { 'per-hour': { type: 'string', default: '10' } } });
const database = await benchDatabase('outage', 54393);
let failed = true;
try {
  await migrate({ connectionString: database.connectionString });
  const report = await runReceiverOutage({
    databaseUrl: database.connectionString,
    eventsPerHour: Number(values['per-hour']),
    log: (line) => console.log(line),
  });
  const { defects, ...figures } = report;
  console.log(JSON.stringify(figures, null, 2));
  if (defects.length > 0) {
    console.error(`AUDIT FAILED: ${defects.length} defects`);
    for (const defect of defects.slice(0, 40)) console.error(`  ${defect}`);
  } else {
    console.log('AUDIT PASSED: no defect');
    failed = false;
  }
} finally {
  await database.close();
}
process.exit(failed ? 1 : 0);
