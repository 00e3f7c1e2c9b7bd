import { describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { newMerchant, WALLET, useApi } from '../helpers/api.ts';

const db = useTestDatabase('api_checkout_sessions');
const { call } = useApi(db);

describe('checkout sessions (Interface B, Stripe Checkout style)', () => {
  test.each(['/api/v1', '/v1'])(
    '%s: created with POST /checkout/sessions, read back with GET /checkout/sessions/{id}, the same as GET /payments/{id}',
    async (prefix) => {
      const m = await newMerchant(db.store);
      const created = await call('POST', `${prefix}/checkout/sessions`, {
        key: m.test,
        as: 'x-api-key',
        body: { amount: '4.5', currency: 'USDC', chain: 'base', merchantWallet: WALLET },
      });
      expect(created.status).toBe(201);
      const read = await call('GET', `${prefix}/checkout/sessions/${created.body.id}`, { key: m.test, as: 'x-api-key' });
      expect(read).toMatchObject({ status: 200, body: { id: created.body.id, status: 'pending', checkoutUrl: created.body.checkoutUrl } });
      expect(read.body).toEqual((await call('GET', `${prefix}/payments/${created.body.id}`, { key: m.test, as: 'x-api-key' })).body);
      // Another merchant's or mode's session is not found; an unknown id is a 404 that names it.
      const other = await newMerchant(db.store, 'Other');
      expect(await call('GET', `${prefix}/checkout/sessions/${created.body.id}`, { key: other.test })).toMatchObject({
        status: 404,
        body: { error: `checkout session ${created.body.id} not found` },
      });
      expect((await call('GET', `${prefix}/checkout/sessions/${created.body.id}`, { key: m.live })).status).toBe(404);
      expect(await call('GET', `${prefix}/checkout/sessions/nope`, { key: m.test })).toMatchObject({
        status: 404,
        body: { error: 'checkout session nope not found' },
      });
    },
  );
});
