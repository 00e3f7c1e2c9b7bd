import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { startDaemon } from '../../src/daemon.ts';
import { loadConfig } from '../../src/internal/config.ts';
import { appendEvent } from '../../src/payments/outbox.ts';
import { verifyWebhook } from '../../src/index.ts';
import { logger } from '../helpers/delivery.ts';
import { startReceiver } from '../helpers/webhookReceiver.ts';

const db = useTestDatabase('delivery_daemon');
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-delivery-'));
afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

test('the daemon worker delivers outbox events, and a restart between a failed attempt and its retry loses nothing', async () => {
  const receiver = await startReceiver((_request, index) => (index === 0 ? { status: 503 } : { status: 200 }));
  const config = loadConfig({ DATABASE_URL: db.connectionString, PORT: '0', SVC_DATA_DIR: dataDir, SVC_WEBHOOK_ALLOW_PRIVATE: 'true', LOG_LEVEL: 'silent' });
  const first = await startDaemon({ config, logger, roles: ['api', 'worker'] });
  try {
    const key = first.bootstrap!.testKey;
    const registered = await fetch(`${first.url}/api/v1/webhooks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: `${receiver.url}/daemon` }),
    });
    expect(registered.status).toBe(201);
    const { secret } = (await registered.json()) as { secret: string };
    const event = await db.store.transaction((sql) =>
      appendEvent(sql, { merchantId: first.bootstrap!.merchantId, livemode: false, type: 'payment.confirmed', data: { id: 'ses_daemon' } }),
    );
    await receiver.waitFor(1, 10_000);
    // The 503 is recorded with its retry 5 s out; then the daemon goes away.
    await expect
      .poll(async () => (await db.store.query('SELECT status, attempt_count FROM webhook_deliveries WHERE event_id = $1', [event.id])).rows[0], {
        timeout: 5_000,
      })
      .toEqual({ status: 'pending', attempt_count: 1 });
    await first.shutdown.kill('test restart');

    const second = await startDaemon({ config, logger, roles: ['worker'] });
    try {
      await receiver.waitFor(2, 15_000);
      const retry = receiver.received[1]!;
      expect(retry.receivedAt - receiver.received[0]!.receivedAt).toBeGreaterThanOrEqual(4_500);
      expect(await verifyWebhook(retry.rawBody, retry.headers, secret)).toEqual(event);
      await expect
        .poll(async () => (await db.store.query('SELECT status FROM webhook_deliveries WHERE event_id = $1', [event.id])).rows[0]!.status, { timeout: 5_000 })
        .toBe('succeeded');
    } finally {
      await second.shutdown.kill('test done');
    }
  } finally {
    await first.shutdown.kill('test done');
    await receiver.close();
  }
});
