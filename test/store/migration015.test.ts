import { randomBytes } from 'node:crypto';
import { expect, test } from 'vitest';
import { useUpgradeDatabases } from '../helpers/migrations.ts';
import { migrate } from '../../src/store/migrate.ts';
import { createMerchant } from '../../src/accounts/index.ts';
import { createSecretBox } from '../../src/internal/crypto.ts';

/**
 * Migration 015 on a database that already holds paid sessions (migrated up to 014 first): each
 * session's confirmed money is computed from its transfers and the stored heads by the engine's
 * rule, so refunds right after the upgrade count only confirmed money.
 */
const { migrationsBelow, databaseAt } = useUpgradeDatabases();

test('015 backfills amount_confirmed by the confirmation rule: depth or finalized on EVM, finalized only on solana', async () => {
  const { connectionString, store } = await databaseAt(migrationsBelow('015'), 'migration_015');
  const { merchant } = await createMerchant(store, createSecretBox(randomBytes(32)), { name: 'Upgraded' });
  const session = (id: string, chain: string, received: bigint) =>
    store.query(
      `INSERT INTO payment_sessions (id, merchant_id, livemode, status, chain, currency, decimals, amount, amount_due, amount_received, fee,
         token_addresses, pay_to, required_confirmations, expires_at, monitor_until)
       VALUES ($1, $2, true, 'confirmed', $3, 'USDC', 6, 10000000, 10000000, $4::numeric, 100000, '{}', 'wallet', 32, now(), now())`,
      [id, merchant.id, chain, String(received)],
    );
  let log = 0;
  const transfer = (sessionId: string, chain: string, block: number, amount: number, status = 'observed') =>
    store.query(
      `INSERT INTO transfers (livemode, chain, tx_hash, log_index, block_number, token_address, to_address, amount, status, session_id)
       VALUES (true, $1, 'tx', $2, $3, 'token', 'wallet', $4, $5, $6)`,
      [chain, log++, block, amount, status, sessionId],
    );
  const head = (chain: string, headBlock: number, finalized: number) =>
    store.query('INSERT INTO chain_heads (livemode, chain, head_block, finalized_block) VALUES (true, $1, $2, $3)', [chain, headBlock, finalized]);

  await head('polygon', 140, 132);
  await session('ses_evm', 'polygon', 20_000_000n);
  await transfer('ses_evm', 'polygon', 100, 10_000_000); // 41 deep: confirmed
  await transfer('ses_evm', 'polygon', 130, 3_000_000); // 11 deep, but finalized: confirmed
  await transfer('ses_evm', 'polygon', 135, 7_000_000); // 6 deep: pending
  await transfer('ses_evm', 'polygon', 90, 5_000_000, 'removed'); // removed by a reorg: not money
  await head('solana', 600, 550);
  await session('ses_sol', 'solana', 15_000_000n);
  await transfer('ses_sol', 'solana', 500, 10_000_000); // finalized: confirmed
  await transfer('ses_sol', 'solana', 560, 5_000_000); // 41 slots deep, not finalized: pending on solana
  await session('ses_nohead', 'base', 10_000_000n);
  await transfer('ses_nohead', 'base', 10, 10_000_000); // no head stored for base: nothing is known confirmed
  await session('ses_none', 'polygon', 0n);

  await migrate({ connectionString });
  const { rows } = await store.query('SELECT id, amount_confirmed::text FROM payment_sessions ORDER BY id');
  expect(rows).toEqual([
    { id: 'ses_evm', amount_confirmed: '13000000' },
    { id: 'ses_nohead', amount_confirmed: '0' },
    { id: 'ses_none', amount_confirmed: '0' },
    { id: 'ses_sol', amount_confirmed: '10000000' },
  ]);
  const { rows: refunds } = await store.query(
    `SELECT column_name FROM information_schema.columns WHERE table_name = 'refunds' AND column_name LIKE 'flag%' ORDER BY 1`,
  );
  expect(refunds.map((row) => row.column_name)).toEqual(['flag_reason', 'flagged_at']);
});
