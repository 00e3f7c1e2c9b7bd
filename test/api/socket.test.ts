import { afterAll, beforeAll, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { buildApi, createSocketClient, newMerchant, payer, PUBLIC_URL, WALLET } from '../helpers/api.ts';
import { createOpenApiChecker, type OpenApiChecker } from '../helpers/openapiCheck.ts';

/** Every endpoint of both interfaces once over a real socket, each answer checked against the OpenAPI document. */
const db = useTestDatabase('api_socket');
let app: ReturnType<typeof buildApi>;
let call: ReturnType<typeof createSocketClient>;
let checker: OpenApiChecker;

beforeAll(async () => {
  app = buildApi(db.store);
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  checker = await createOpenApiChecker(app);
  call = createSocketClient(url, checker);
});
afterAll(() => app.close());

test('walkthrough of every endpoint over HTTP, both prefixes and both auth headers', async () => {
  const m = await newMerchant(db.store);
  const body = { amount: '19.99', currency: 'USDC', chain: 'polygon', merchantWallet: WALLET };
  expect((await call('GET', '/api/v1/health')).status).toBe(200);
  expect((await call('GET', '/v1/health')).status).toBe(200);

  const a = await call('POST', '/api/v1/sessions', { key: m.test, body, headers: { 'idempotency-key': 'walk-1' } });
  expect(a.status).toBe(201);
  expect((await call('POST', '/api/v1/sessions', { key: m.test, body, headers: { 'idempotency-key': 'walk-1' } })).headers['idempotent-replayed']).toBe('true');
  expect((await call('GET', `/v1/sessions/${a.body.id}`, { key: m.test, as: 'x-api-key' })).body.status).toBe('created');

  const b = await call('POST', '/v1/payments', { key: m.test, as: 'x-api-key', body });
  expect(b.body.status).toBe('pending');
  expect((await call('GET', `/api/v1/payments/${b.body.id}`, { key: m.test })).status).toBe(200);
  expect((await call('GET', '/api/v1/payments?limit=1', { key: m.test, as: 'x-api-key' })).body).toMatchObject({ hasMore: true, nextCursor: b.body.id });
  expect((await call('POST', '/api/v1/checkout/sessions', { key: m.test, body })).status).toBe(201);

  const link = await call('POST', '/api/v1/payment-links', { key: m.test, as: 'x-api-key', body });
  expect(link.status).toBe(201);
  expect((await call('GET', '/api/v1/payment-links', { key: m.test })).body.data.length).toBe(1);
  expect((await call('GET', `/v1/payment-links/${link.body.id}`, { key: m.test })).status).toBe(200);
  const visit = await call('GET', `/pay/${link.body.id}`);
  expect(visit.status).toBe(303);
  expect(visit.headers.location).toMatch(new RegExp(`^${PUBLIC_URL}/checkout/ses_`));
  expect((await call('PATCH', `/api/v1/payment-links/${link.body.id}`, { key: m.test, body: { active: false } })).body.active).toBe(false);
  expect((await call('GET', `/pay/${link.body.id}`)).status).toBe(410);

  expect((await call('GET', '/api/v1/currencies', { key: m.test })).body.data.length).toBe(12);
  expect((await call('GET', '/api/v1/status', { key: m.test })).body.api.status).toBe('healthy');

  const challenge = await call('POST', '/api/v1/wallets/challenges', { key: m.live, body: { chain: 'base', address: payer.address } });
  const wallet = await call('POST', '/api/v1/wallets', {
    key: m.live,
    body: { challengeId: challenge.body.id, signature: await payer.signMessage({ message: challenge.body.message }) },
  });
  expect(wallet.status).toBe(201);
  expect((await call('GET', '/api/v1/wallets', { key: m.test })).body.data.length).toBe(1);

  await db.store.query(`UPDATE payment_sessions SET status = 'confirmed', amount_received = amount_due, amount_confirmed = amount_due WHERE id = $1`, [
    b.body.id,
  ]);
  const refund = await call('POST', '/api/v1/refunds', { key: m.test, body: { paymentId: b.body.id, amount: '5', address: WALLET } });
  expect(refund.status).toBe(201);
  const other = await call('POST', '/api/v1/refunds', { key: m.test, body: { paymentId: b.body.id, amount: '5', address: WALLET } });
  expect((await call('GET', `/api/v1/refunds/${refund.body.id}`, { key: m.test })).status).toBe(200);
  expect((await call('GET', '/api/v1/refunds', { key: m.test })).body.data.length).toBe(2);
  expect((await call('POST', `/api/v1/refunds/${refund.body.id}/complete`, { key: m.test, body: { txHash: `0x${'1'.repeat(64)}` } })).body.status).toBe(
    'completed',
  );
  expect((await call('POST', `/v1/refunds/${other.body.id}/reject`, { key: m.test, as: 'x-api-key' })).body.status).toBe('rejected');

  // Error statuses of the spec's table over the socket.
  expect((await call('POST', '/api/v1/payments', { key: m.test, body: { ...body, amount: '-1' } })).status).toBe(400);
  expect((await call('POST', '/api/v1/payments', { body })).status).toBe(401);
  expect((await call('POST', '/api/v1/payments', { key: m.readOnly, body })).status).toBe(403);
  expect((await call('GET', '/api/v1/payments/ses_missing', { key: m.test })).status).toBe(404);
  expect((await call('POST', '/api/v1/sessions', { key: m.test, body: { ...body, amount: '20' }, headers: { 'idempotency-key': 'walk-1' } })).status).toBe(422);

  const operations = new Set([...checker.seen].map((entry) => entry.split(' ').slice(0, 2).join(' ')));
  expect(operations.size).toBeGreaterThanOrEqual(21);
});
