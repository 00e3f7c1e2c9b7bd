/**
 * Fuzzing (issue 30, run 5): requests generated from the daemon's own OpenAPI document (every
 * operation, both interfaces, every kind of key; wrong types, huge and malformed values, missing
 * fields, odd Unicode, wrong content types) sent to a gateway process (`svc start`). The audit
 * (bench/chaos/lib/fuzzRun.ts) exits non-zero on any 5xx, any 4xx that is not `{"error": "…"}`,
 * any request left unanswered, or a daemon that exited. Figures: docs/reliability.md "Fuzzing".
 *
 *   npx tsx bench/chaos/fuzz.ts [--requests 100000] [--concurrency 16] [--seed 1]
 *
 * DATABASE_URL to use an existing (empty) database; otherwise an embedded cluster in a temporary folder.
 */
import { parseArgs } from 'node:util';
import { benchDatabase } from '../lib.ts';
import { runFuzz } from './lib/fuzzRun.ts';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '100000' },
    concurrency: { type: 'string', default: '16' },
    seed: { type: 'string', default: '1' },
  },
});
const database = await benchDatabase('fuzz', 54392);
let failed = true;
try {
  const report = await runFuzz({
    databaseUrl: database.connectionString,
    requests: Number(values.requests),
    concurrency: Number(values.concurrency),
    seed: Number(values.seed),
    log: (line) => console.log(line),
  });
  const { defects, ...figures } = report;
  console.log(JSON.stringify(figures, null, 2));
  if (defects.length > 0) {
    console.error(`AUDIT FAILED: ${defects.length} kinds of defect`);
    for (const defect of defects.slice(0, 40)) console.error(`  ${defect.count} x ${defect.defect}\n      e.g. ${defect.example}`);
  } else {
    console.log('AUDIT PASSED: no defect');
    failed = false;
  }
} finally {
  await database.close();
}
process.exit(failed ? 1 : 0);
