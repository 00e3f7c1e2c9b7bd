import { describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { newMerchant, useApi } from '../helpers/api.ts';
import { addWallet } from '../../src/accounts/index.ts';
import { createEngine } from '../../src/engine/index.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { insertTransfer, newEvmWallet, setHead, statusOf } from '../helpers/engine.ts';

/** One merchant must never see, be matched or claim money sent to another merchant's wallet. */
const db = useTestDatabase('engine_cross_merchant');
const { call } = useApi(db, { checked: false });
const engine = () => createEngine({ store: db.store, logger: createLogger({ level: 'silent' }), metrics: createMetricsRegistry({ defaultMetrics: false }) });

const session = (key: string, amount: string, wallet: string) =>
  call('POST', '/api/v1/sessions', { key, body: { amount, currency: 'USDC', chain: 'polygon', merchantWallet: wallet } });

describe('wallets shared between merchants', () => {
  test('a wallet another merchant verified cannot be used inline (409), and nothing is written', async () => {
    const a = await newMerchant(db.store, 'Owner');
    const b = await newMerchant(db.store, 'Intruder');
    const wallet = newEvmWallet();
    await addWallet(db.store, { merchantId: a.id, chain: 'polygon', address: wallet, verifiedBy: 'operator' });
    const refused = await session(b.live, '7', wallet);
    expect(refused).toMatchObject({
      status: 409,
      body: { error: `merchantWallet ${wallet} is a verified wallet of another merchant; use a receiving wallet of your own` },
    });
    const { rowCount } = await db.store.query('SELECT 1 FROM wallets WHERE merchant_id = $1', [b.id]);
    expect(rowCount).toBe(0);
  });

  test('an unverified address two merchants use: no amount match across them, no listing, no claim, until one verifies it', async () => {
    const a = await newMerchant(db.store, 'A');
    const b = await newMerchant(db.store, 'B');
    const wallet = newEvmWallet();
    const sa = await session(a.live, '25', wallet);
    const sb = await session(b.live, '10', wallet);
    expect([sa.status, sb.status]).toEqual([201, 201]);
    // B's exact due amount arrives: with A's session on the same address the amount cannot say whose it is.
    const exactForB = await insertTransfer(db.store, { livemode: true, to: wallet, amount: BigInt(sb.body.amountDueBaseUnits), block: 1000n });
    const stray = await insertTransfer(db.store, { livemode: true, to: wallet, amount: 100_000_000n, block: 1001n });
    await setHead(db.store, { livemode: true, head: 1100n });
    await engine().reconcile({ chain: 'polygon', livemode: true });
    expect((await statusOf(db.store, sb.body.id)).status).toBe('created');
    expect((await statusOf(db.store, sa.body.id)).status).toBe('created');
    for (const key of [a.live, b.live]) {
      expect((await call('GET', '/api/v1/transfers/unmatched', { key })).body.data).toEqual([]);
      const claim = await call('POST', `/api/v1/transfers/trf_${stray.id}/attribution`, { key, body: { sessionId: key === a.live ? sa.body.id : sb.body.id } });
      expect(claim.status).toBe(404);
    }
    // A proves the wallet is theirs: A sees both transfers and can attribute; B still sees nothing.
    await addWallet(db.store, { merchantId: a.id, chain: 'polygon', address: wallet, verifiedBy: 'operator' });
    const listed = (await call('GET', '/api/v1/transfers/unmatched', { key: a.live })).body.data.map((t: { id: string }) => t.id).sort();
    expect(listed).toEqual([`trf_${exactForB.id}`, `trf_${stray.id}`].sort());
    expect((await call('GET', '/api/v1/transfers/unmatched', { key: b.live })).body.data).toEqual([]);
  });
});
