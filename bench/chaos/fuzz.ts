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
import { benchDatabase } from '../lib.ts';
import { reportDefects, runOptions } from './lib/cli.ts';
import { runFuzz } from './lib/fuzzRun.ts';

const options = runOptions({ requests: 100_000, concurrency: 16, seed: 1 });
const database = await benchDatabase('fuzz', 54392);
let passed = false;
try {
  const report = await runFuzz({ databaseUrl: database.connectionString, ...options, log: (line) => console.log(line) });
  passed = reportDefects(report, (defect) => `${defect.count} x ${defect.defect}\n      e.g. ${defect.example}`);
} finally {
  await database.close();
}
process.exit(passed ? 0 : 1);
