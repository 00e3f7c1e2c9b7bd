import { randomBytes } from 'node:crypto';
import { expect, test } from 'vitest';
import { insertMerchantBefore014, useUpgradeDatabases } from '../helpers/migrations.ts';
import { migrate } from '../../src/store/migrate.ts';
import type { Store } from '../../src/store/index.ts';
import { createApiKey } from '../../src/accounts/index.ts';
import { createSecretBox } from '../../src/internal/crypto.ts';

/**
 * Migration 013 on a database whose live sessions without merchantWallet paid the oldest verified
 * wallet (migrated up to 012 first): that wallet stays the default only where no test key can
 * have added it; elsewhere the chain gets no default, and no younger wallet is promoted instead.
 */
const { migrationsBelow, databaseAt } = useUpgradeDatabases();

const box = createSecretBox(randomBytes(32));

async function wallet(store: Store, merchantId: string, address: string, method: string | null, age: string, chain = 'polygon') {
  await store.query(
    `INSERT INTO wallets (id, merchant_id, chain, address, verification_method, verified_at, created_at)
     VALUES ($1, $2, $3, $4, $5::text, CASE WHEN $5::text IS NULL THEN NULL ELSE now() - $6::interval END, now() - $6::interval)`,
    [`wal_${address.slice(2, 14)}`, merchantId, chain, address, method, age],
  );
}

async function keyAged(store: Store, merchantId: string, livemode: boolean, age: string, scopes?: ('read' | 'write')[], revokedAgo?: string) {
  const { apiKey } = await createApiKey(store, { merchantId, livemode, ...(scopes ? { scopes } : {}) });
  await store.query('UPDATE api_keys SET created_at = now() - $2::interval WHERE id = $1', [apiKey.id, age]);
  if (revokedAgo) await store.query('UPDATE api_keys SET revoked_at = now() - $2::interval WHERE id = $1', [apiKey.id, revokedAgo]);
}

const address = (n: number) => `0x${String(n).padStart(4, '0')}${'ab'.repeat(18)}`;

test('013 keeps the oldest verified wallet as the default only where no test key can have added it', async () => {
  const { connectionString, store } = await databaseAt(migrationsBelow('013'), 'migration_013');
  // The merchants table as 012 had it (createMerchant writes today's schema, from migration 014 on).
  let merchants = 0;
  const merchant = async (name: string) => {
    const id = `mer_m013_${++merchants}`;
    await insertMerchantBefore014(store, { id, name, sealedSecret: box.seal('whsec_x') });
    return id;
  };

  // Operator wallet oldest (a test key exists): kept. Its base wallet, signed while a test key existed: no default.
  const operator = await merchant('Operator');
  await keyAged(store, operator, false, '30 days');
  await wallet(store, operator, address(1), 'operator', '20 days');
  await wallet(store, operator, address(2), 'eip191', '10 days');
  await wallet(store, operator, address(3), 'eip191', '10 days', 'base');
  // Signed wallet oldest while a write test key existed: no default, and the younger operator wallet is not promoted.
  const exposed = await merchant('Exposed');
  await keyAged(store, exposed, false, '30 days');
  await wallet(store, exposed, address(4), 'eip191', '20 days');
  await wallet(store, exposed, address(5), 'operator', '10 days');
  // Signed with only live keys around (a read-only test key, a revoked one, one created later): kept.
  const liveOnly = await merchant('Live only');
  await keyAged(store, liveOnly, true, '30 days');
  await keyAged(store, liveOnly, false, '30 days', ['read']);
  await keyAged(store, liveOnly, false, '30 days', undefined, '25 days');
  await keyAged(store, liveOnly, false, '5 days');
  await wallet(store, liveOnly, address(6), null, '40 days'); // unverified: never a default
  await wallet(store, liveOnly, address(7), 'eip191', '20 days');

  await migrate({ connectionString });
  const { rows } = await store.query<{ address: string; is_default: boolean }>('SELECT address, is_default FROM wallets ORDER BY address');
  expect(Object.fromEntries(rows.map((row) => [row.address, row.is_default]))).toEqual({
    [address(1)]: true,
    [address(2)]: false,
    [address(3)]: false,
    [address(4)]: false,
    [address(5)]: false,
    [address(6)]: false,
    [address(7)]: true,
  });
});
