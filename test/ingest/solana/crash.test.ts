import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { KeyPairSigner } from '@solana/kit';
import { useTestDatabase } from '../../helpers/db.ts';
import { startSolanaRpc, type SolanaTestRpc } from '../../helpers/solanaRpc.ts';
import { createSolanaMerchant, waitFor } from '../../helpers/solanaIngest.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
const db = useTestDatabase('solana_crash');
/** Payments made before the ingester first starts: its catch-up, spread over 3 wallets x 2 mints. */
const PAYMENTS = 360;
let rpc: SolanaTestRpc;
let wallets: KeyPairSigner[];
const expected = new Map<string, bigint>();

function spawnIngester(): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', path.join(here, '../../helpers/solanaIngestProcess.ts')], {
    env: { ...process.env, DATABASE_URL: db.connectionString, SVC_SOLANA_RPC_URL: rpc.url, LOG_LEVEL: 'error' },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
}

function exited(child: ChildProcess): Promise<void> {
  return child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((resolve) => child.once('exit', () => resolve()));
}

async function storedTransfers(): Promise<number> {
  const { rows } = await db.store.query<{ count: bigint }>("SELECT count(*) FROM transfers WHERE chain = 'solana'");
  return Number(rows[0]!.count);
}

beforeAll(async () => {
  // 50 ms a request: the batched catch-up spans several commits, so kills land inside it.
  rpc = await startSolanaRpc({ latencyMs: 50 });
  wallets = [];
  for (let i = 0; i < 3; i++) wallets.push((await createSolanaMerchant(db.store, rpc)).wallet);
  const payer = await rpc.wallet();
  await rpc.fund(payer.address, 'USDC', 1_000_000_000_000n);
  await rpc.fund(payer.address, 'USDT', 1_000_000_000_000n);
  for (let i = 0; i < PAYMENTS; i++) {
    const paid = await rpc.pay({
      from: payer,
      to: wallets[i % 3]!.address,
      currency: i % 2 === 0 ? 'USDC' : 'USDT',
      amount: 1_000_000n + BigInt(i),
      checked: i % 4 < 2,
      version: i % 5 === 0 ? 'legacy' : 0,
    });
    expected.set(paid.signature, 1_000_000n + BigInt(i));
  }
  // Most of the history is final, the newest tenth only confirmed: both paths run in the catch-up.
  rpc.ledger.finalize(rpc.ledger.slot - BigInt(PAYMENTS / 10));
}, 120_000);

afterAll(async () => {
  await rpc?.stop();
});

test('SIGKILL at random points during catch-up, then restart: every payment stored exactly once, cursors at the finalized tip', async () => {
  // Each round kills the process a random 0-150 ms after it has stored something new, so the
  // kills land inside the catch-up rather than in the start-up of node.
  const delays = Array.from({ length: 5 }, () => Math.floor(Math.random() * 150));
  console.log(`solana crash test kill delays after progress (ms): ${delays.join(', ')}`);
  const progress: number[] = [];
  for (const delay of delays) {
    const before = await storedTransfers();
    if (before === PAYMENTS) break;
    const child = spawnIngester();
    await waitFor(async () => (await storedTransfers()) > before, 'progress', 30_000);
    await new Promise((resolve) => setTimeout(resolve, delay));
    child.kill('SIGKILL');
    await exited(child);
    progress.push(await storedTransfers());
  }
  console.log(`transfers stored after each kill: ${progress.join(', ')} of ${PAYMENTS}`);
  // At least one kill must have landed mid catch-up, or this test proved nothing.
  expect(progress.some((count) => count > 0 && count < PAYMENTS)).toBe(true);

  const last = spawnIngester();
  try {
    await waitFor(async () => (await storedTransfers()) === PAYMENTS, 'the catch-up to finish', 60_000);
    rpc.ledger.finalize();
    await waitFor(
      async () => {
        const { rows } = await db.store.query<{ count: bigint }>("SELECT count(*) FROM solana_signatures WHERE commitment = 'confirmed'");
        return rows[0]!.count === 0n;
      },
      'every signature finalized',
      30_000,
    );
  } finally {
    last.kill('SIGTERM');
    await exited(last);
  }

  const { rows } = await db.store.query<{ tx_hash: string; amount: string; status: string }>(
    "SELECT tx_hash, amount::text, status FROM transfers WHERE chain = 'solana'",
  );
  expect(rows).toHaveLength(PAYMENTS);
  expect(new Set(rows.map((row) => row.tx_hash)).size).toBe(PAYMENTS);
  for (const row of rows) {
    expect(row.status).toBe('observed');
    expect(BigInt(row.amount)).toBe(expected.get(row.tx_hash));
  }
  const { rows: cursors } = await db.store.query<{ address: string; cursor_signature: string | null }>(
    'SELECT address, cursor_signature FROM solana_token_accounts ORDER BY address',
  );
  expect(cursors).toHaveLength(6);
  for (const cursor of cursors) expect(cursor.cursor_signature).toBe(rpc.ledger.forAddress(cursor.address)[0]!.signature);
  const { rows: signatures } = await db.store.query<{ count: bigint }>('SELECT count(*) FROM solana_signatures');
  expect(Number(signatures[0]!.count)).toBe(PAYMENTS);
}, 150_000);
