/**
 * CPU per session creation with nothing else running: one connection, creations one after the
 * other (the API's bounded transaction and `createSession`, no HTTP), over 64 live wallets and
 * 500 prices like `bench/api.ts`'s "64 wallets" line. Prints the Postgres backend's CPU (from
 * /proc) and this process's per creation: on a shared machine these move far less with the
 * load than a closed-loop run's, so two checkouts compare (docs/benchmarks.md, issue 28 goal 4).
 *
 *   npx tsx bench/creationCpu.ts [--warm 2000] [--creations 4000]
 *
 * Uses DATABASE_URL when set, otherwise an embedded Postgres in a temporary folder (port
 * BENCH_PG_PORT, default 54369). Linux only (/proc).
 */
import fs from 'node:fs';
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts';
import { addWallet, createMerchant } from '../src/accounts/index.ts';
import { createSession, type CreateSessionParams } from '../src/payments/sessions.ts';
import { createSecretBox } from '../src/internal/crypto.ts';
import { createStore } from '../src/store/index.ts';
import { migrate } from '../src/store/migrate.ts';
import { benchDatabase } from './lib.ts';

const { values } = parseArgs({ options: { warm: { type: 'string', default: '2000' }, creations: { type: 'string', default: '4000' } } });
const database = await benchDatabase('creation-cpu', 54369);
await migrate({ connectionString: database.connectionString });
const store = createStore({ connectionString: database.connectionString, max: 1 });
// The API's limits: its transactions send their server limits with BEGIN.
const bounded = store.bounded({ connectMs: 3_000, queryMs: 3_000 });
const { merchant } = await createMerchant(store, createSecretBox(randomBytes(32)), { name: 'Creation CPU' });
const wallets = Array.from({ length: 64 }, () => privateKeyToAddress(generatePrivateKey()));
for (const address of wallets) await addWallet(store, { merchantId: merchant.id, chain: 'polygon', address, verifiedBy: 'operator' });
const { rows } = await store.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
const backend = rows[0]!.pid;

/** The backend's CPU time so far (user + system), in microseconds (clock ticks of 10 ms). */
function backendCpu(): number {
  const fields = fs.readFileSync(`/proc/${backend}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

let i = 0;
const next = (): CreateSessionParams => ({
  merchantId: merchant.id,
  livemode: true,
  amount: `${10 + (i % 500)}.25`,
  currency: 'USDC',
  chain: 'polygon',
  merchantWallet: wallets[i++ % 64]!,
  monitorWindowSeconds: 3600,
  liveChains: ['polygon'],
});

async function run(label: string, n: number): Promise<void> {
  const postgres = backendCpu();
  const node = process.cpuUsage();
  const started = performance.now();
  for (let k = 0; k < n; k++) await bounded.transaction((sql) => createSession(sql, next()));
  const wall = performance.now() - started;
  const nodeUsed = process.cpuUsage(node);
  const load = fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  console.log(
    `${label}: ${n} creations; CPU per creation: Postgres backend ${((backendCpu() - postgres) / n).toFixed(0)} µs, Node ${((nodeUsed.user + nodeUsed.system) / n).toFixed(0)} µs; wall ${((1000 * wall) / n).toFixed(0)} µs; load ${load}`,
  );
}

try {
  console.log(`creation CPU: npx tsx bench/creationCpu.ts ${process.argv.slice(2).join(' ')}`.trimEnd());
  await run('warm-up (not a result)', Number(values.warm));
  await run('measured', Number(values.creations));
} finally {
  await store.close();
  await database.close();
}
