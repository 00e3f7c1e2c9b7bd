import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, expect, test } from 'vitest';
import { createDatabase } from '../helpers/db.ts';
import { migrate, MIGRATIONS_DIR } from '../../src/store/migrate.ts';
import { createStore, type Store } from '../../src/store/index.ts';
import { createApiKey } from '../../src/accounts/index.ts';
import { createSecretBox } from '../../src/internal/crypto.ts';

/**
 * Migration 011 (idempotency keys per account) and its correction 012, on databases that already
 * hold idempotency keys: one migrated up to 010 first, one that applied 011 as it first landed,
 * and one that applied the edited 011 that main carried for a while. All of them start.
 */
const cleanup: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const step of cleanup.reverse()) await step();
});

/** A folder with the migrations whose file names sort below `below`, plus `extra` files. */
function migrationsBelow(below: string, extra: Record<string, string> = {}): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-migrations-'));
  cleanup.push(async () => fs.rmSync(dir, { recursive: true, force: true }));
  for (const file of fs.readdirSync(MIGRATIONS_DIR).filter((name) => name < below)) fs.copyFileSync(path.join(MIGRATIONS_DIR, file), path.join(dir, file));
  for (const [file, text] of Object.entries(extra)) fs.writeFileSync(path.join(dir, file), text);
  return dir;
}

/** A database migrated with the files in `dir`, and a store on it. */
async function databaseAt(dir: string, label: string): Promise<{ connectionString: string; store: Store }> {
  const database = await createDatabase({ label, migrated: false });
  cleanup.push(database.drop);
  await migrate({ connectionString: database.connectionString, dir });
  const store = createStore({ connectionString: database.connectionString, max: 2 });
  cleanup.push(() => store.close());
  return { connectionString: database.connectionString, store };
}

test('011 with 012 backfills the account and mode of existing keys and keeps the finished answer of a duplicated key', async () => {
  const { connectionString, store } = await databaseAt(migrationsBelow('011'), 'migration_011');
  // The merchants table as 010 had it (createMerchant writes today's schema, from migration 014 on).
  const merchant = { id: 'mer_upgraded011' };
  await store.query("INSERT INTO merchants (id, name, webhook_secret_sealed) VALUES ($1, 'Upgraded', $2)", [
    merchant.id,
    createSecretBox(randomBytes(32)).seal('whsec_x'),
  ]);
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
  await store.query("INSERT INTO merchants (id, name, webhook_secret_sealed) VALUES ($1, 'Early', $2)", [
    merchant.id,
    createSecretBox(randomBytes(32)).seal('whsec_x'),
  ]);
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
