import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { box, merchant } from '../helpers/delivery.ts';
import { main, type Io } from '../../src/cli/main.ts';
import { appendEvent } from '../../src/payments/outbox.ts';
import { createEndpoint, updateEndpoint } from '../../src/delivery/endpoints.ts';
import { newId } from '../../src/internal/crypto.ts';

/** `svc webhooks redeliver` against real Postgres: which failed deliveries it sends again, and that it never sends one twice. */
const db = useTestDatabase('cli_redeliver');
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-cli-redeliver-'));
afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

async function svc(...argv: string[]) {
  let out = '';
  let err = '';
  const io: Io = {
    env: { DATABASE_URL: db.connectionString, SVC_DATA_DIR: dataDir, LOG_LEVEL: 'warn' },
    out: (text) => (out += text),
    err: (text) => (err += text),
  };
  const code = await main(argv, io);
  return { code, out, err, json: () => JSON.parse(out) };
}

async function event(merchantId: string): Promise<string> {
  const appended = await db.store.transaction((sql) => appendEvent(sql, { merchantId, livemode: true, type: 'payment.confirmed', data: { id: newId('ses') } }));
  await db.store.query('UPDATE events SET dispatched_at = now() WHERE id = $1', [appended.id]);
  return appended.id;
}

async function delivery(params: {
  eventId: string;
  merchantId: string;
  endpointId: string | null;
  status: 'failed' | 'succeeded';
  at: string;
}): Promise<string> {
  const id = newId('whd');
  await db.store.query(
    `INSERT INTO webhook_deliveries (id, event_id, merchant_id, livemode, endpoint_id, url, origin, target, status, attempt_count, created_at, completed_at)
     VALUES ($1, $2, $3, true, $4, 'https://shop.example/hooks', 'dispatch', $5, $6, 3, $7, $7)`,
    [id, params.eventId, params.merchantId, params.endpointId, params.endpointId ? `endpoint:${params.endpointId}` : 'session', params.status, params.at],
  );
  return id;
}

const redeliveries = async (eventId: string) =>
  (
    await db.store.query<{ endpoint_id: string | null; origin: string; status: string }>(
      "SELECT endpoint_id, origin, status FROM webhook_deliveries WHERE event_id = $1 AND origin = 'redeliver' ORDER BY created_at",
      [eventId],
    )
  ).rows;

test('failed deliveries of the merchant in the window are sent again once; disabled endpoints, other windows and other merchants are left alone', async () => {
  const { merchant: shop } = await merchant(db.store, 'Shop');
  const { merchant: other } = await merchant(db.store, 'Other');
  const owner = { merchantId: shop.id, livemode: true };
  const { endpoint: up } = await createEndpoint(db.store, box, { ...owner, url: 'https://shop.example/hooks' });
  const { endpoint: off } = await createEndpoint(db.store, box, { ...owner, url: 'https://shop.example/old' });
  await updateEndpoint(db.store, owner, off.id, { status: 'disabled' });
  const { endpoint: elsewhere } = await createEndpoint(db.store, box, { merchantId: other.id, livemode: true, url: 'https://other.example/hooks' });

  const inWindow = await event(shop.id);
  const toDisabled = await event(shop.id);
  const succeeded = await event(shop.id);
  const beforeWindow = await event(shop.id);
  const otherMerchant = await event(other.id);
  await delivery({ eventId: inWindow, merchantId: shop.id, endpointId: up.id, status: 'failed', at: '2026-11-20T12:00:00Z' });
  await delivery({ eventId: toDisabled, merchantId: shop.id, endpointId: off.id, status: 'failed', at: '2026-11-20T13:00:00Z' });
  await delivery({ eventId: succeeded, merchantId: shop.id, endpointId: up.id, status: 'succeeded', at: '2026-11-20T13:30:00Z' });
  await delivery({ eventId: beforeWindow, merchantId: shop.id, endpointId: up.id, status: 'failed', at: '2026-11-19T23:00:00Z' });
  await delivery({ eventId: otherMerchant, merchantId: other.id, endpointId: elsewhere.id, status: 'failed', at: '2026-11-20T12:00:00Z' });
  const window = ['--merchant', shop.id, '--since', '2026-11-20T00:00:00Z', '--until', '2026-11-21T00:00:00Z'];

  const dry = await svc('webhooks', 'redeliver', ...window, '--dry-run', '--json');
  expect(dry.code, dry.err).toBe(0);
  expect(dry.json()).toMatchObject({
    dryRun: true,
    failed: 2,
    redelivered: [
      { eventId: inWindow, endpointId: up.id },
      { eventId: toDisabled, endpointId: off.id },
    ],
  });
  expect(await redeliveries(inWindow)).toEqual([]);

  const sent = await svc('webhooks', 'redeliver', ...window, '--json');
  expect(sent.code, sent.err).toBe(0);
  expect(sent.json()).toMatchObject({
    merchantId: shop.id,
    livemode: true,
    failed: 2,
    redelivered: [{ eventId: inWindow, endpointId: up.id }],
    skipped: [{ eventId: toDisabled, endpointId: off.id, reason: 'the endpoint is disabled: re-enable it first' }],
  });
  expect(await redeliveries(inWindow)).toEqual([{ endpoint_id: up.id, origin: 'redeliver', status: 'pending' }]);
  for (const untouched of [toDisabled, succeeded, beforeWindow, otherMerchant]) expect(await redeliveries(untouched)).toEqual([]);

  // Again: the pending redelivery replaced the failed one, so nothing is sent twice.
  const again = await svc('webhooks', 'redeliver', ...window, '--json');
  expect(again.json()).toMatchObject({ failed: 1, redelivered: [] });
  expect(await redeliveries(inWindow)).toHaveLength(1);
  const human = await svc('webhooks', 'redeliver', ...window);
  expect(human.out).toContain(`skipped ${toDisabled} (${off.id}): the endpoint is disabled: re-enable it first`);
});

test('bad windows, modes and merchants are usage errors (exit 2)', async () => {
  expect(JSON.parse((await svc('webhooks', 'redeliver', '--merchant', 'mer_x', '--json')).err)).toEqual({ error: '--since is required' });
  expect((await svc('webhooks', 'redeliver', '--merchant', 'mer_x', '--since', 'yesterday')).err).toContain('--since "yesterday" must be an ISO 8601 time');
  expect((await svc('webhooks', 'redeliver', '--merchant', 'mer_x', '--since', '2026-11-20', '--until', '2026-11-19')).err).toContain(
    '--until must be later than --since',
  );
  expect((await svc('webhooks', 'redeliver', '--merchant', 'mer_x', '--since', '2026-11-20', '--mode', 'prod')).code).toBe(2);
  const unknown = await svc('webhooks', 'redeliver', '--merchant', 'mer_nope', '--since', '2026-11-20');
  expect(unknown.code).toBe(2);
  expect(unknown.err).toContain('merchant mer_nope does not exist');
  const help = await svc('--help');
  for (const command of ['ingest status', 'ingest rescan', 'webhooks redeliver']) expect(help.out).toContain(command);
});
