import { randomBytes } from 'node:crypto';
import { expect, test } from 'vitest';
import { useUpgradeDatabases } from '../helpers/migrations.ts';
import { migrate } from '../../src/store/migrate.ts';
import { createMerchant } from '../../src/accounts/index.ts';
import { createSecretBox } from '../../src/internal/crypto.ts';

/**
 * Migration 021 on a database that already holds sessions at rest (migrated below 021 first):
 * those whose transfers no longer add up to what the engine stored are marked, so the first pass
 * after the upgrade evaluates them as the engine's old rule would have; the others are not.
 */
const { migrationsBelow, databaseAt } = useUpgradeDatabases();

test('021 marks the sessions at rest whose counted total differs from the stored one, and only those', async () => {
  const { connectionString, store } = await databaseAt(migrationsBelow('021'), 'migration_021');
  const { merchant } = await createMerchant(store, createSecretBox(randomBytes(32)), { name: 'Upgraded' });
  const session = (id: string, status: string, received: number, reported = received) =>
    store.query(
      `INSERT INTO payment_sessions (id, merchant_id, livemode, status, chain, currency, decimals, amount, amount_due, amount_received,
         reported_received, fee, token_addresses, pay_to, required_confirmations, expires_at, monitor_until)
       VALUES ($1, $2, true, $3, 'polygon', 'USDC', 6, 10000000, 10000000, $4::numeric, $5::numeric, 100000, '{}', 'wallet', 32, now(), now())`,
      [id, merchant.id, status, String(received), String(reported)],
    );
  let log = 0;
  const transfer = (sessionId: string, amount: number, status = 'observed') =>
    store.query(
      `INSERT INTO transfers (livemode, chain, tx_hash, log_index, block_number, token_address, to_address, amount, status, session_id)
       VALUES (true, 'polygon', 'tx', $1, 100, 'token', 'wallet', $2, $3, $4)`,
      [log++, amount, status, sessionId],
    );
  await session('ses_settled_ok', 'settled', 10_000_000);
  await transfer('ses_settled_ok', 10_000_000);
  await session('ses_settled_removed', 'settled', 10_000_000);
  await transfer('ses_settled_removed', 10_000_000, 'removed'); // a reorg the engine has not seen
  await session('ses_settled_excess', 'settled', 10_000_000, 10_000_000);
  await transfer('ses_settled_excess', 10_000_000);
  await transfer('ses_settled_excess', 1_000_000); // a duplicate payment not reported yet
  await session('ses_expired_late', 'expired', 0);
  await transfer('ses_expired_late', 10_000_000); // matched late, not evaluated yet
  await session('ses_expired_empty', 'expired', 0);
  await session('ses_confirming', 'confirming', 0);
  await transfer('ses_confirming', 10_000_000); // in flight: evaluated anyway, not marked

  await migrate({ connectionString });
  const { rows } = await store.query('SELECT id FROM payment_sessions WHERE transfers_changed ORDER BY id');
  expect(rows.map((row) => row.id)).toEqual(['ses_expired_late', 'ses_settled_excess', 'ses_settled_removed']);

  // From now on the trigger marks a session at rest when one of its transfers changes.
  await store.query(`UPDATE transfers SET status = 'removed' WHERE session_id = 'ses_settled_ok'`);
  await store.query(`UPDATE transfers SET status = 'removed' WHERE session_id = 'ses_confirming'`);
  const { rows: marked } = await store.query(`SELECT id FROM payment_sessions WHERE transfers_changed AND id IN ('ses_settled_ok', 'ses_confirming')`);
  expect(marked).toEqual([{ id: 'ses_settled_ok' }]);
});
