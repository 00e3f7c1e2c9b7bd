import { describe, expect, test } from 'vitest';
import { getAddress, numberToHex, pad } from 'viem';
import { useTestDatabase } from '../../helpers/db.ts';
import { newMerchant } from '../../helpers/engine.ts';
import { createWatchedWallets } from '../../../src/ingest/evm/watched.ts';
import { PRUNE_MARGIN_MS } from '../../../src/ingest/evm/depositWatch.ts';

/** The EVM ingester's watched set with deposit addresses (docs/ingest-evm.md#deposit-addresses), on real Postgres. */
const db = useTestDatabase('evm_deposit_watch');
const WALLET = '0x2222222222222222222222222222222222222222';
let serial = 0;

/** A session in address mode on `chain` with its window ending `windowEndsInMs` from now (negative: ended), created `createdAgoMs` ago. */
async function depositSession(params: { merchantId: string; chain?: string; livemode?: boolean; windowEndsInMs?: number; createdAgoMs?: number }) {
  serial += 1;
  const address = getAddress(pad(numberToHex(0xdead0000 + serial), { size: 20 }));
  await db.store.query(
    `INSERT INTO payment_sessions (id, merchant_id, livemode, status, chain, currency, decimals, amount, amount_due, fee, token_addresses, pay_to,
       required_confirmations, expires_at, monitor_until, created_at, attribution, deposit_address)
     VALUES ($1, $2, $3, 'created', $4, 'USDC', 6, 1000000, 1000000, 10000, '{}', $5, 32,
       now() + make_interval(secs => $6::float8 / 1000), now() + make_interval(secs => $6::float8 / 1000), now() - make_interval(secs => $7::float8 / 1000), 'address', $8)`,
    [
      `ses_watch${serial}`,
      params.merchantId,
      params.livemode ?? true,
      params.chain ?? 'polygon',
      WALLET,
      params.windowEndsInMs ?? 3_600_000,
      params.createdAgoMs ?? 0,
      address,
    ],
  );
  return address;
}

describe('deposit addresses in the watched set', () => {
  test('the first read takes live open deposit addresses of the chain only; later ones join on refresh; lookups give the canonical form', async () => {
    const merchantId = await newMerchant(db.store);
    const open = await depositSession({ merchantId, createdAgoMs: 3 * 86_400_000 });
    const ended = await depositSession({ merchantId, windowEndsInMs: -2 * PRUNE_MARGIN_MS });
    const sandbox = await depositSession({ merchantId, livemode: false });
    const otherChain = await depositSession({ merchantId, chain: 'base' });
    const watched = createWatchedWallets({ chain: 'polygon' });
    expect(await watched.refresh(db.store)).toBe(1);
    expect(watched.canonical(open.toLowerCase())).toBe(open);
    for (const address of [ended, sandbox, otherChain]) expect(watched.canonical(address.toLowerCase())).toBeUndefined();

    const later = await depositSession({ merchantId });
    expect(await watched.refresh(db.store)).toBe(1);
    expect(watched.canonical(later.toLowerCase())).toBe(later);
    expect([watched.size, watched.deposits]).toEqual([2, 2]);
    // Re-reading the overlap adds nothing twice.
    expect(await watched.refresh(db.store)).toBe(0);
    expect(watched.topics()).toHaveLength(2);
  });

  test('an address whose window ended leaves the set only when pruning is allowed (caught up), after the margin', async () => {
    const merchantId = await newMerchant(db.store);
    // A margin of 200 ms instead of 10 minutes, so the window can end during the test.
    const watched = createWatchedWallets({ chain: 'optimism', pruneMarginMs: 200 });
    await watched.refresh(db.store);
    const closing = await depositSession({ merchantId, chain: 'optimism', windowEndsInMs: 300 });
    await watched.refresh(db.store);
    expect(watched.canonical(closing.toLowerCase())).toBe(closing);
    await new Promise((resolve) => setTimeout(resolve, 800));
    const backfilling = createWatchedWallets({ chain: 'optimism', pruneMarginMs: 200 });
    // A fresh ingester still takes it when its checkpoint last moved before the window ended (a backfill may pay it).
    await db.store.query(
      `INSERT INTO chain_heads (livemode, chain, processed_block, updated_at) VALUES (true, 'optimism', 1, now() - interval '2 hours')
       ON CONFLICT (livemode, chain) DO UPDATE SET updated_at = excluded.updated_at`,
    );
    await backfilling.refresh(db.store);
    expect(backfilling.canonical(closing.toLowerCase())).toBe(closing);
    // The running set keeps it while catching up (window end read when it joined), drops it when caught up.
    await watched.refresh(db.store, { prune: false });
    expect(watched.deposits).toBe(1);
    await watched.refresh(db.store, { prune: true });
    expect([watched.deposits, watched.canonical(closing.toLowerCase())]).toEqual([0, undefined]);
    // Once caught up, a fresh first read does not take it either.
    await db.store.query(`UPDATE chain_heads SET updated_at = now() WHERE livemode AND chain = 'optimism'`);
    const restarted = createWatchedWallets({ chain: 'optimism', pruneMarginMs: 200 });
    await restarted.refresh(db.store);
    expect(restarted.deposits).toBe(0);
  });
});
