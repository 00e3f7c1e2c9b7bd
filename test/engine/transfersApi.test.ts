import { describe, expect, test } from 'vitest';
import pino from 'pino';
import { useTestDatabase } from '../helpers/db.ts';
import { newMerchant as newApiMerchant, useApi } from '../helpers/api.ts';
import { createEngine } from '../../src/engine/index.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { sandboxWallet } from '../../src/internal/sandboxIds.ts';
import { eventsOf, insertTransfer, newEvmWallet, setHead, statusOf } from '../helpers/engine.ts';

const db = useTestDatabase('engine_transfers_api');
const { call } = useApi(db);
const engine = () => createEngine({ store: db.store, logger: pino({ level: 'silent' }), metrics: createMetricsRegistry({ defaultMetrics: false }) });

let block = 1000n;

/**
 * A merchant with a test key, two sandbox sessions of 25 USDC on one wallet (sandbox sessions pay
 * to the merchant's sandbox address, whatever merchantWallet says), and an ambiguous 20 USDC
 * transfer the engine left unmatched.
 */
async function ambiguous() {
  const m = await newApiMerchant(db.store);
  const wallet = sandboxWallet('polygon', m.id);
  // No merchantWallet: a sandbox session pays to the sandbox address (and a 0x5a4db0c5… address is refused as one).
  const create = () => call('POST', '/api/v1/sessions', { key: m.test, body: { amount: '25', currency: 'USDC', chain: 'polygon' } });
  const [a, b] = [(await create()).body, (await create()).body];
  block += 100n;
  const transfer = await insertTransfer(db.store, { livemode: false, to: wallet, amount: 20_000_000n, block });
  await setHead(db.store, { livemode: false, head: block + 40n });
  await engine().reconcile({ chain: 'polygon', livemode: false });
  return { m, wallet, a, b, transfer, id: `trf_${transfer.id}` };
}

describe('GET /transfers/unmatched and POST /transfers/:id/attribution', () => {
  test('an unmatched transfer is listed for its merchant only, and attributing it by hand moves the session', async () => {
    const { m, a, b, id, transfer } = await ambiguous();
    const listed = await call('GET', '/api/v1/transfers/unmatched', { key: m.test, as: 'x-api-key' });
    expect(listed.status).toBe(200);
    expect(listed.body).toMatchObject({ hasMore: false, nextCursor: null });
    expect(listed.body.data).toEqual([
      expect.objectContaining({
        id,
        chain: 'polygon',
        currency: 'USDC',
        amount: '20',
        amountBaseUnits: '20000000',
        txHash: transfer.txHash,
        status: 'unmatched',
        sessionId: null,
        livemode: false,
      }),
    ]);
    const other = await newApiMerchant(db.store);
    expect((await call('GET', '/v1/transfers/unmatched', { key: other.test })).body.data).toEqual([]);
    expect((await call('GET', '/v1/transfers/unmatched', { key: m.live })).body.data).toEqual([]);
    expect((await call('POST', `/v1/transfers/${id}/attribution`, { key: other.test, body: { sessionId: a.id } })).status).toBe(404);

    const attributed = await call('POST', `/api/v1/transfers/${id}/attribution`, { key: m.test, body: { sessionId: b.id } });
    expect(attributed.status).toBe(200);
    expect(attributed.body).toMatchObject({
      transfer: { id, status: 'matched', sessionId: b.id, matchMethod: 'manual' },
      session: { id: b.id, status: 'pending' },
    });
    expect(await eventsOf(db.store, b.id)).toEqual(['payment.confirming', 'payment.underpaid']);
    expect(await statusOf(db.store, b.id)).toMatchObject({ status: 'pending', amount_received: '20000000' });
    expect((await call('GET', '/api/v1/transfers/unmatched', { key: m.test })).body.data).toEqual([]);

    const again = await call('POST', `/api/v1/transfers/${id}/attribution`, { key: m.test, body: { sessionId: a.id } });
    expect(again).toMatchObject({ status: 409, body: { error: `transfer ${id} is already attributed to session ${b.id}` } });
    expect(await statusOf(db.store, a.id)).toMatchObject({ status: 'created', amount_received: '0' });
  });

  test('bad attributions are 4xx and change nothing', async () => {
    const { m, a, id } = await ambiguous();
    const elsewhere = (await call('POST', '/api/v1/sessions', { key: m.test, body: { amount: '25', currency: 'USDC', chain: 'polygon' } })).body;
    // A session paying to another address (as sandbox sessions made before they always used the sandbox address did).
    await db.store.query('UPDATE payment_sessions SET pay_to = $2 WHERE id = $1', [elsewhere.id, newEvmWallet()]);
    const cases: [string, unknown, number, string][] = [
      [`/api/v1/transfers/${id}/attribution`, { sessionId: 'ses_nope' }, 404, 'session ses_nope not found'],
      [`/api/v1/transfers/trf_999999999/attribution`, { sessionId: a.id }, 404, 'transfer trf_999999999 not found'],
      [`/api/v1/transfers/bogus/attribution`, { sessionId: a.id }, 404, 'transfer bogus not found'],
      [`/api/v1/transfers/${id}/attribution`, { sessionId: elsewhere.id }, 400, `transfer ${id} went to`],
      [`/api/v1/transfers/${id}/attribution`, {}, 400, 'sessionId'],
    ];
    for (const [url, body, status, message] of cases) {
      const answer = await call('POST', url, { key: m.test, body });
      expect(answer.status, url).toBe(status);
      expect(answer.body.error).toContain(message);
    }
    expect((await call('POST', `/api/v1/transfers/${id}/attribution`, { key: m.readOnly, body: { sessionId: a.id } })).status).toBe(403);
    const { rows } = await db.store.query('SELECT session_id FROM transfers WHERE id = $1', [BigInt(id.slice(4))]);
    expect(rows[0]!.session_id).toBeNull();
    expect(await eventsOf(db.store, a.id)).toEqual([]);
  });

  test('a transfer removed by a reorg cannot be attributed (409)', async () => {
    const { m, a, id, transfer } = await ambiguous();
    await db.store.query(`UPDATE transfers SET status = 'removed' WHERE id = $1`, [transfer.id]);
    const answer = await call('POST', `/api/v1/transfers/${id}/attribution`, { key: m.test, body: { sessionId: a.id } });
    expect(answer).toMatchObject({ status: 409, body: { error: `transfer ${id} is no longer on chain (removed by a reorg) and cannot pay a session` } });
  });

  test('paging: limit and startingAfter walk the list newest first', async () => {
    const m = await newApiMerchant(db.store);
    const wallet = sandboxWallet('polygon', m.id);
    await call('POST', '/api/v1/sessions', { key: m.test, body: { amount: '25', currency: 'USDC', chain: 'polygon' } });
    await call('POST', '/api/v1/sessions', { key: m.test, body: { amount: '25', currency: 'USDC', chain: 'polygon' } });
    block += 100n;
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push(`trf_${(await insertTransfer(db.store, { livemode: false, to: wallet, amount: BigInt(1_000_000 + i), block })).id}`);
    await engine().reconcile({ chain: 'polygon', livemode: false });
    const first = await call('GET', '/api/v1/transfers/unmatched?limit=2&chain=polygon', { key: m.test });
    expect(first.body.data.map((t: { id: string }) => t.id)).toEqual([ids[2], ids[1]]);
    expect(first.body).toMatchObject({ hasMore: true, nextCursor: ids[1] });
    const second = await call('GET', `/api/v1/transfers/unmatched?limit=2&startingAfter=${ids[1]}`, { key: m.test });
    expect(second.body).toMatchObject({ data: [expect.objectContaining({ id: ids[0] })], hasMore: false });
    expect((await call('GET', '/api/v1/transfers/unmatched?startingAfter=x', { key: m.test })).status).toBe(400);
  });
});
