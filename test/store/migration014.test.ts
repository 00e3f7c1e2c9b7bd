import { randomBytes } from 'node:crypto';
import { expect, onTestFinished, test } from 'vitest';
import { insertMerchantBefore014, useUpgradeDatabases } from '../helpers/migrations.ts';
import { migrate } from '../../src/store/migrate.ts';
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
const { migrationsBelow, databaseAt } = useUpgradeDatabases();

test('014 keeps the existing merchant secret as the live one; sandbox deliveries are signed with a new secret the old one does not verify', async () => {
  const { connectionString, store } = await databaseAt(migrationsBelow('014'), 'migration_014', 3);
  const box = createSecretBox(randomBytes(32));
  const oldSecret = 'whsec_TheOneSecretOfBothModesBefore14';
  const merchantId = 'mer_upgraded014';
  await insertMerchantBefore014(store, { id: merchantId, name: 'Upgraded', sealedSecret: box.seal(oldSecret) });

  await migrate({ connectionString });
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
  onTestFinished(() => receiver.close());
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
