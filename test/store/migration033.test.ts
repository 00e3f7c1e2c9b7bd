import { randomBytes } from 'node:crypto';
import { expect, test } from 'vitest';
import { useUpgradeDatabases } from '../helpers/migrations.ts';
import { migrate } from '../../src/store/migrate.ts';
import type { Store } from '../../src/store/index.ts';
import { createApiKey, createMerchant } from '../../src/accounts/index.ts';
import { createSecretBox } from '../../src/internal/crypto.ts';

/**
 * Migration 033 on a database that applied 013 twenty days ago: a chain's only verified wallet is
 * paid without being the default (spec §4.2) only when it cannot have been added with a test key.
 */
const { migrationsBelow, databaseAt } = useUpgradeDatabases();
const box = createSecretBox(randomBytes(32));
const address = (n: number) => `0x${String(n).padStart(4, '0')}${'cd'.repeat(18)}`;

async function wallet(store: Store, merchantId: string, n: number, method: string | null, age: string) {
  await store.query(
    `INSERT INTO wallets (id, merchant_id, chain, address, verification_method, verified_at, created_at)
     VALUES ($1, $2, 'polygon', $3, $4::text, CASE WHEN $4::text IS NULL THEN NULL ELSE now() - $5::interval END, now() - $5::interval)`,
    [`wal_m033_${n}`, merchantId, address(n), method, age],
  );
}

async function testKey(store: Store, merchantId: string, age: string, scopes?: ('read' | 'write')[]) {
  const { apiKey } = await createApiKey(store, { merchantId, livemode: false, ...(scopes ? { scopes } : {}) });
  await store.query('UPDATE api_keys SET created_at = now() - $2::interval WHERE id = $1', [apiKey.id, age]);
}

test('033 marks only wallets signed before 013 while a write test key existed', async () => {
  const { connectionString, store } = await databaseAt(migrationsBelow('033'), 'migration_033');
  await store.query("UPDATE schema_migrations SET applied_at = now() - interval '20 days' WHERE version = 13");
  const merchant = async (name: string) => (await createMerchant(store, box, { name })).merchant.id;

  const exposed = await merchant('Exposed'); // a write test key since 30 days
  await testKey(store, exposed, '30 days');
  await wallet(store, exposed, 1, 'eip191', '25 days'); // signed before 013: marked
  await wallet(store, exposed, 2, 'operator', '25 days'); // the operator: never marked
  await wallet(store, exposed, 3, 'eip191', '10 days'); // after 013 only live keys add wallets
  await wallet(store, exposed, 4, null, '25 days'); // unverified: not a candidate anyway
  const readOnly = await merchant('Read-only test key');
  await testKey(store, readOnly, '30 days', ['read']);
  await wallet(store, readOnly, 5, 'eip191', '25 days');
  const laterKey = await merchant('Test key made later');
  await testKey(store, laterKey, '22 days');
  await wallet(store, laterKey, 6, 'eip191', '25 days');

  await migrate({ connectionString });
  const { rows } = await store.query<{ id: string; sole_wallet_payable: boolean }>('SELECT id, sole_wallet_payable FROM wallets ORDER BY id');
  expect(Object.fromEntries(rows.map((row) => [row.id, row.sole_wallet_payable]))).toEqual({
    wal_m033_1: false,
    wal_m033_2: true,
    wal_m033_3: true,
    wal_m033_4: true,
    wal_m033_5: true,
    wal_m033_6: true,
  });
});
