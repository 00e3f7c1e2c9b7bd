import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, expect, test } from 'vitest';
import { createDatabase } from '../helpers/db.ts';
import { migrate } from '../../src/store/migrate.ts';
import { createStore } from '../../src/store/index.ts';
import { createSecretBox } from '../../src/internal/crypto.ts';
import { rotateMerchantSecret } from '../../src/delivery/index.ts';
import { verifyWebhook } from '../../src/index.ts';
import { confirmSession, createFakeClock, delivery, insertSession } from '../helpers/delivery.ts';
import { startReceiver } from '../helpers/webhookReceiver.ts';

/**
 * Migration 014 on a database from before it (migrated up to 013 first), holding a merchant whose
 * one secret signed both modes: that secret stays the live one, and sandbox deliveries get a new
 * secret of their own, which the old one does not verify.
 */
const cleanup: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const step of cleanup.reverse()) await step();
});

test('014 keeps the existing merchant secret as the live one; sandbox deliveries are signed with a new secret the old one does not verify', async () => {
  const database = await createDatabase({ label: 'migration_014', migrated: false });
  cleanup.push(database.drop);
  const all = path.resolve(import.meta.dirname, '../../migrations');
  const before = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-migrations-013-'));
  cleanup.push(async () => fs.rmSync(before, { recursive: true, force: true }));
  for (const file of fs.readdirSync(all).filter((name) => name < '014')) fs.copyFileSync(path.join(all, file), path.join(before, file));
  await migrate({ connectionString: database.connectionString, dir: before });

  const store = createStore({ connectionString: database.connectionString, max: 3 });
  cleanup.push(() => store.close());
  const box = createSecretBox(randomBytes(32));
  const oldSecret = 'whsec_TheOneSecretOfBothModesBefore14';
  const merchantId = 'mer_upgraded014';
  await store.query("INSERT INTO merchants (id, name, webhook_secret_sealed) VALUES ($1, 'Upgraded', $2)", [merchantId, box.seal(oldSecret)]);

  await migrate({ connectionString: database.connectionString });
  const { rows } = await store.query<{ livemode: boolean; secret_sealed: string }>(
    'SELECT livemode, secret_sealed FROM merchant_webhook_secrets WHERE merchant_id = $1',
    [merchantId],
  );
  expect(rows.map((row) => [row.livemode, box.open(row.secret_sealed)])).toEqual([[true, oldSecret]]);
  const { rows: columns } = await store.query(
    "SELECT 1 FROM information_schema.columns WHERE table_name = 'merchants' AND column_name = 'webhook_secret_sealed'",
  );
  expect(columns).toEqual([]);

  const receiver = await startReceiver();
  cleanup.push(() => receiver.close());
  const clock = createFakeClock();
  const deliver = async (livemode: boolean) => {
    const sessionId = await insertSession(store, { merchantId, livemode, webhookUrl: `${receiver.url}/hook` });
    const event = await confirmSession(store, { merchantId, sessionId, livemode });
    await delivery(store, { box, clock }).drain();
    return receiver.received.find((r) => r.headers['x-service-event-id'] === event.id)!;
  };
  const verdict = (got: { rawBody: string; headers: Record<string, unknown> }, secret: string) =>
    verifyWebhook(got.rawBody, got.headers as never, secret, { now: clock.now() }).then(
      () => 'verified',
      (error) => error.reason,
    );

  expect(await verdict(await deliver(true), oldSecret)).toBe('verified');
  // The first sandbox delivery made a sandbox secret (nobody has seen it): the old one fails.
  expect(await verdict(await deliver(false), oldSecret)).toBe('signature_mismatch');
  const { rows: sandbox } = await store.query('SELECT 1 FROM merchant_webhook_secrets WHERE merchant_id = $1 AND NOT livemode', [merchantId]);
  expect(sandbox).toHaveLength(1);
  // The merchant gets a sandbox secret it can use by rotating it.
  const { secret } = await store.transaction((sql) => rotateMerchantSecret(sql, box, { merchantId, livemode: false }, { expiresInSeconds: 0 }));
  expect(await verdict(await deliver(false), secret)).toBe('verified');
  expect(await verdict(await deliver(true), oldSecret)).toBe('verified');
});
