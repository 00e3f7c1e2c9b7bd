import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { getAddress, type Address } from 'viem';
import { startAnvil, type Anvil } from '../../helpers/anvil.ts';
import { useTestDatabase } from '../../helpers/db.ts';
import { loadChains } from '../../../src/internal/chains.ts';
import { mintMany } from '../../helpers/batchMinter.ts';
import { merchantWithWallets, processedBlock, waitProcessed } from '../../helpers/evmIngest.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
const db = useTestDatabase('ingest_crash');
const chain = 'polygon' as const;
const usdc = loadChains()[chain].tokens.find((token) => token.symbol === 'USDC')!.address as Address;
const WALLETS = [1, 2, 3, 4, 5].map((i) => getAddress(`0x${String(i).repeat(40)}`.slice(0, 42)));
const UNWATCHED = getAddress('0x9999999999999999999999999999999999999999');
/** Thousands of transfers over ~250 blocks, so a backfill in 3-6 block ranges commits many checkpoints. */
const MINTS = 5_000;
const PER_TX = 20;
const RECIPIENTS = [...WALLETS, UNWATCHED];

/** What mintMany sends: per transaction, amounts firstAmount + i to RECIPIENTS[i % 6]; the watched ones. */
function expectedWatched(): { count: number; total: bigint; max: bigint } {
  let count = 0;
  let total = 0n;
  let max = 0n;
  for (let sent = 0; sent < MINTS; sent += PER_TX) {
    for (let i = 0; i < Math.min(PER_TX, MINTS - sent); i++) {
      if (RECIPIENTS[i % RECIPIENTS.length] === UNWATCHED) continue;
      const amount = 1_000_000n + BigInt(sent + i);
      count += 1;
      total += amount;
      if (amount > max) max = amount;
    }
  }
  return { count, total, max };
}

let anvil: Anvil;

/** Spawns the ingest process (one node process: SIGKILL hits the ingester itself, not a wrapper). */
function spawnIngester(): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', path.join(here, '../../helpers/evmIngestProcess.ts')], {
    env: { ...process.env, DATABASE_URL: db.connectionString, SVC_POLYGON_RPC_URL: anvil.rpcUrl, INGEST_RANGE: '3,6', LOG_LEVEL: 'error' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
}

/** Resolves once the process has loaded its code and started ingesting (it prints `ready`). */
function ready(child: ChildProcess): Promise<void> {
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (chunk) => String(chunk).includes('ready') && resolve());
    child.once('exit', (code) => reject(new Error(`ingest process exited early (${code})`)));
  });
}

function exited(child: ChildProcess): Promise<void> {
  return child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((resolve) => child.once('exit', () => resolve()));
}

beforeAll(async () => {
  anvil = await startAnvil({ chain });
  await anvil.installChainTokens();
  await merchantWithWallets(db.store, chain, WALLETS);
  await mintMany(anvil, { token: usdc, recipients: RECIPIENTS, count: MINTS, firstAmount: 1_000_000n, perTx: PER_TX });
}, 120_000);
afterAll(async () => {
  await anvil?.stop();
});

test('SIGKILL at random points during a backfill of thousands of transfers, then restart: every transfer stored exactly once', async () => {
  const head = await anvil.blockNumber();
  const progress: bigint[] = [];
  // Random kill points along the backfill: each run is killed a random 0-100 ms after its
  // checkpoint passes a random block (so every kill lands mid-backfill, whatever the machine's
  // speed). Printed so a failure can be replayed.
  const targets = Array.from({ length: 5 }, () => 1n + BigInt(Math.floor(Math.random() * Number((head * 4n) / 5n)))).sort((a, b) => (a < b ? -1 : 1));
  const jitters = targets.map(() => Math.floor(Math.random() * 100));
  console.log(`crash test kill points (block + ms): ${targets.map((block, i) => `${block}+${jitters[i]}`).join(', ')}`);
  for (const [index, target] of targets.entries()) {
    const child = spawnIngester();
    await ready(child);
    await waitProcessed(db.store, chain, target, 60_000);
    await new Promise((resolve) => setTimeout(resolve, jitters[index]));
    child.kill('SIGKILL');
    await exited(child);
    progress.push((await processedBlock(db.store, chain)) ?? -1n);
  }
  const last = spawnIngester();
  try {
    await waitProcessed(db.store, chain, head, 90_000);
  } finally {
    last.kill('SIGTERM');
    await exited(last);
  }
  console.log(`checkpoint after each kill: ${progress.join(', ')} (head ${head})`);
  // The kills landed mid-backfill (the checkpoint had moved but not finished).
  expect(progress.filter((block) => block > 0n && block < head).length).toBeGreaterThanOrEqual(3);

  const { rows } = await db.store.query<{ n: bigint; distinct_keys: bigint; total: string; min_amount: string; max_amount: string }>(
    `SELECT count(*) AS n, count(DISTINCT (tx_hash, log_index)) AS distinct_keys, sum(amount)::text AS total, min(amount)::text AS min_amount, max(amount)::text AS max_amount
     FROM transfers WHERE chain = $1 AND status = 'observed'`,
    [chain],
  );
  const expected = expectedWatched();
  expect(expected.count).toBeGreaterThan(4_000);
  expect(rows[0]).toEqual({
    n: BigInt(expected.count),
    distinct_keys: BigInt(expected.count),
    total: expected.total.toString(),
    min_amount: '1000000',
    max_amount: expected.max.toString(),
  });
  const unwatched = await db.store.query('SELECT 1 FROM transfers WHERE to_address = $1', [UNWATCHED]);
  expect(unwatched.rowCount).toBe(0);
}, 150_000);
