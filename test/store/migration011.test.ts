import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, expect, test } from 'vitest';
import { createDatabase } from '../helpers/db.ts';
import { migrate } from '../../src/store/migrate.ts';
import { createStore } from '../../src/store/index.ts';
import { createApiKey } from '../../src/accounts/index.ts';
import { createSecretBox } from '../../src/internal/crypto.ts';

/**
 * Migration 011 on a database that already holds idempotency keys (migrated up to 010 first):
 * every row gets its account and mode, and where two API keys of one account used the same
 * Idempotency-Key the finished row (the answer a retry must get) stays, not a newer running claim.
 */
const cleanup: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const step of cleanup.reverse()) await step();
});

test('011 backfills the account and mode of existing keys and keeps the finished answer of a duplicated key', async () => {
  const database = await createDatabase({ label: 'migration_011', migrated: false });
  cleanup.push(database.drop);
  const all = path.resolve(import.meta.dirname, '../../migrations');
  const before = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-migrations-010-'));
  cleanup.push(async () => fs.rmSync(before, { recursive: true, force: true }));
  for (const file of fs.readdirSync(all).filter((name) => name < '011')) fs.copyFileSync(path.join(all, file), path.join(before, file));
  await migrate({ connectionString: database.connectionString, dir: before });

  const store = createStore({ connectionString: database.connectionString, max: 2 });
  cleanup.push(() => store.close());
  // The merchants table as 010 had it (createMerchant writes today's schema).
  const merchant = { id: 'mer_upgraded011' };
  await store.query("INSERT INTO merchants (id, name, webhook_secret_sealed) VALUES ($1, 'Upgraded', $2)", [merchant.id, createSecretBox(randomBytes(32)).seal('whsec_x')]);
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

  await migrate({ connectionString: database.connectionString });
  const { rows } = await store.query<{ idempotency_key: string; livemode: boolean; api_key_id: string; state: string; merchant_id: string }>(
    'SELECT idempotency_key, livemode, api_key_id, state, merchant_id FROM idempotency_keys ORDER BY idempotency_key, livemode',
  );
  expect(rows).toEqual([
    { idempotency_key: 'order-1', livemode: false, api_key_id: first.id, state: 'done', merchant_id: merchant.id },
    { idempotency_key: 'order-1', livemode: true, api_key_id: live.id, state: 'done', merchant_id: merchant.id },
    { idempotency_key: 'order-2', livemode: false, api_key_id: second.id, state: 'done', merchant_id: merchant.id },
  ]);
});
