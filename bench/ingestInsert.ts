/**
 * Postgres CPU per range of new transfers, by way of writing them and by schema: what the EVM
 * backfill's commits cost the database alone (no anvil, no ingester).
 *
 *   npx tsx bench/ingestInsert.ts [--rows 12000] [--ranges 8] [--rounds 3]
 *
 * Each round, for each case, a fresh migrated database gets `--ranges` ranges of `--rows`
 * transfers (1,000 logs per transaction, as bench/ingest.ts mints them), one transaction each, on
 * one connection; the figure is that backend's CPU time (user + system, from /proc) per range, so
 * it varies far less with the machine's load than wall time. Cases, alternating in every round:
 * - `upsert, before 027`: the unnest upsert on the schema before migration 027 (its indexes put back);
 * - `upsert`: the same upsert on the current schema (what a range after a reorg still runs);
 * - `copy`: what a range commit now runs, `COPY` of new rows (insertNewTransfers).
 * Postgres is DATABASE_URL (a superuser URL) or an embedded cluster under .data/bench-ingest.
 */
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { getAddress } from 'viem';
import { createLogger } from '../src/internal/logger.ts';
import { startEmbeddedPostgres } from '../src/store/embedded.ts';
import { migrate } from '../src/store/migrate.ts';
import { createStore, type SqlWithCopy } from '../src/store/index.ts';
import { insertNewTransfers, upsertTransfers } from '../src/ingest/evm/persist.ts';
import type { ObservedTransfer } from '../src/ingest/evm/transfers.ts';

const { values } = parseArgs({
  options: { rows: { type: 'string', default: '12000' }, ranges: { type: 'string', default: '8' }, rounds: { type: 'string', default: '3' } },
});
const ROWS = Number(values.rows);
const RANGES = Number(values.ranges);
const ROUNDS = Number(values.rounds);
const LOGS_PER_TX = 1_000;

/** The indexes of `transfers` as they were before migration 027. */
const BEFORE_027 = `ALTER TABLE transfers DROP CONSTRAINT transfers_tx_hash_log_index_key;
  ALTER TABLE transfers ADD CONSTRAINT transfers_livemode_chain_tx_hash_log_index_key UNIQUE (livemode, chain, tx_hash, log_index);
  CREATE INDEX transfers_unmatched ON transfers (livemode, chain, to_address, observed_at) WHERE session_id IS NULL;
  CREATE INDEX transfers_tx_hash ON transfers (tx_hash);`;

const CASES: { name: string; schema?: string; write: (sql: SqlWithCopy, transfers: ObservedTransfer[]) => Promise<number> }[] = [
  { name: 'upsert, before 027', schema: BEFORE_027, write: (sql, transfers) => upsertTransfers(sql, 'polygon', transfers) },
  { name: 'upsert', write: (sql, transfers) => upsertTransfers(sql, 'polygon', transfers) },
  { name: 'copy', write: (sql, transfers) => insertNewTransfers(sql, 'polygon', transfers) },
];

const logger = createLogger({ level: 'warn' });
let adminUrl = process.env.DATABASE_URL;
let stopPg = async () => {};
if (!adminUrl) {
  const embedded = await startEmbeddedPostgres({ dataDir: path.resolve('.data/bench-ingest'), port: 54352, logger });
  adminUrl = embedded.connectionString;
  stopPg = embedded.stop;
}
const admin = new pg.Client({ connectionString: adminUrl });
await admin.connect();

const hex = (bytes: number) => `0x${randomBytes(bytes).toString('hex')}`;
const recipients = Array.from({ length: 100 }, () => getAddress(hex(20)));
const payers = Array.from({ length: 50 }, () => getAddress(hex(20)));
let block = 1_000n;
function range(): ObservedTransfer[] {
  const transfers: ObservedTransfer[] = [];
  for (let tx = 0; tx * LOGS_PER_TX < ROWS; tx++) {
    block++;
    const blockHash = hex(32);
    const txHash = hex(32);
    const blockTime = new Date();
    for (let i = 0; i < LOGS_PER_TX && tx * LOGS_PER_TX + i < ROWS; i++)
      transfers.push({
        txHash,
        logIndex: i,
        blockNumber: block,
        blockHash,
        blockTime,
        token: '0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359',
        from: payers[i % payers.length]!,
        to: recipients[i % recipients.length]!,
        amount: BigInt(i + 1),
      });
  }
  return transfers;
}

/** CPU time (ms) of one server process, from /proc (Linux). */
function cpuMs(pid: number): number {
  const fields = fs
    .readFileSync(`/proc/${pid}/stat`, 'utf8')
    .replace(/^.*\) /, '')
    .split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

const results = new Map<string, number[]>();
try {
  for (let round = 0; round < ROUNDS; round++) {
    for (const { name, schema, write } of CASES) {
      const dbName = `bench_insert_${Date.now()}`;
      await admin.query(`CREATE DATABASE ${dbName}`);
      const url = new URL(adminUrl);
      url.pathname = `/${dbName}`;
      await migrate({ connectionString: url.toString() });
      // One connection, so one backend does all the work measured.
      const store = createStore({ connectionString: url.toString(), max: 1 });
      try {
        if (schema) await store.query(schema);
        const ranges = Array.from({ length: RANGES }, range);
        await store.query('CHECKPOINT');
        const pid = await store.transaction(async (sql) => (await sql.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid);
        const before = cpuMs(pid);
        for (const transfers of ranges) {
          const written = await store.transaction((sql) => write(sql, transfers));
          if (written !== transfers.length) throw new Error(`${name}: wrote ${written} of ${transfers.length}`);
        }
        results.set(name, [...(results.get(name) ?? []), Math.round((cpuMs(pid) - before) / RANGES)]);
      } finally {
        await store.close();
        await admin.query(`DROP DATABASE ${dbName} WITH (FORCE)`);
      }
    }
  }
  console.log(`Postgres backend CPU ms per range of ${ROWS} new transfers (${RANGES} ranges, each round in turn):`);
  for (const [name, list] of results) console.log(`  ${name.padEnd(20)} ${list.join('  ')}`);
} finally {
  await admin.end();
  await stopPg();
}
