import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { expect, test } from 'vitest';
import { insertMerchantBefore014, useUpgradeDatabases } from '../helpers/migrations.ts';
import { migrate } from '../../src/store/migrate.ts';
import { createApiKey } from '../../src/accounts/index.ts';
import { createSecretBox } from '../../src/internal/crypto.ts';

/**
 * Migration 011 (idempotency keys per account) and its correction 012, on databases that already
 * hold idempotency keys: one migrated up to 010 first, one that applied 011 as it first landed,
 * and one that applied the edited 011 that main carried for a while. All of them start.
 */
const { migrationsBelow, databaseAt } = useUpgradeDatabases();

test('011 with 012 backfills the account and mode of existing keys and keeps the finished answer of a duplicated key', async () => {
  const { connectionString, store } = await databaseAt(migrationsBelow('011'), 'migration_011');
  const merchant = { id: 'mer_upgraded011' };
  await insertMerchantBefore014(store, { id: merchant.id, name: 'Upgraded', sealedSecret: createSecretBox(randomBytes(32)).seal('whsec_x') });
  const first = (await createApiKey(store, { merchantId: merchant.id, livemode: false })).apiKey;
  const second = (await createApiKey(store, { merchantId: merchant.id, livemode: false })).apiKey;
  const live = (await createApiKey(store, { merchantId: merchant.id, livemode: true })).apiKey;
  const row = (apiKeyId: string, key: string, state: string, age: string) =>
    store.query(
      `INSERT INTO idempotency_keys (api_key_id, idempotency_key, request_hash, state, locked_until, response_status, response_body, created_at, expires_at)
       VALUES ($1, $2, 'h', $3, now(), ${state === 'done' ? 201 : 'NULL'}, ${state === 'done' ? `'{"id":"ses_first"}'` : 'NULL'}, now() - $4::interval, now() + interval '1 day')`,
      [apiKeyId, key, state, age],
    );
  await row(first.id, 'order-1', 'done', '2 minutes');
  await row(second.id, 'order-1', 'running', '1 minute'); // newer, but only a claim
  await row(live.id, 'order-1', 'done', '1 minute'); // the live mode's own key: kept
  await row(second.id, 'order-2', 'done', '1 minute');

  // 012 says "before 011": it runs first, so 011 finds no duplicate left to choose from.
  expect(await migrate({ connectionString, dir: migrationsBelow('013') })).toEqual([11, 12]);
  const { rows } = await store.query<{ idempotency_key: string; livemode: boolean; api_key_id: string; state: string; merchant_id: string }>(
    'SELECT idempotency_key, livemode, api_key_id, state, merchant_id FROM idempotency_keys ORDER BY idempotency_key, livemode',
  );
  expect(rows).toEqual([
    { idempotency_key: 'order-1', livemode: false, api_key_id: first.id, state: 'done', merchant_id: merchant.id },
    { idempotency_key: 'order-1', livemode: true, api_key_id: live.id, state: 'done', merchant_id: merchant.id },
    { idempotency_key: 'order-2', livemode: false, api_key_id: second.id, state: 'done', merchant_id: merchant.id },
  ]);
  const { rows: order } = await store.query<{ version: number }>(
    'SELECT version FROM schema_migrations WHERE version IN (11, 12) ORDER BY applied_at, version',
  );
  expect(order.map((applied) => applied.version)).toEqual([12, 11]);
});

const fixture = (file: string) => fs.readFileSync(path.resolve(import.meta.dirname, '../fixtures/migrations', file), 'utf8');

test.each([
  ['011 as it first landed', fixture('011_as_landed_in_b29aaff.sql')],
  ['the edited 011 that main carried for a while', fixture('011_as_edited_in_2b2c5a2.sql')],
])('a database that applied %s starts: no checksum error, 012 applies and deletes nothing', async (_label, text) => {
  const { connectionString, store } = await databaseAt(migrationsBelow('011', { '011_idempotency_per_account.sql': text }), 'migration_011_applied');
  const merchant = { id: 'mer_early011' };
  await insertMerchantBefore014(store, { id: merchant.id, name: 'Early', sealedSecret: createSecretBox(randomBytes(32)).seal('whsec_x') });
  const key = (await createApiKey(store, { merchantId: merchant.id, livemode: false })).apiKey;
  await store.query(
    `INSERT INTO idempotency_keys (merchant_id, livemode, api_key_id, idempotency_key, request_hash, state, locked_until, expires_at)
     VALUES ($1, false, $2, 'order-1', 'h', 'running', now(), now() + interval '1 day')`,
    [merchant.id, key.id],
  );
  const through012 = migrationsBelow('013');
  expect(await migrate({ connectionString, dir: through012 })).toEqual([12]);
  expect(await migrate({ connectionString, dir: through012 })).toEqual([]);
  expect((await store.query('SELECT 1 FROM idempotency_keys')).rowCount).toBe(1);
});
