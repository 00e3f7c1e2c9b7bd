import { describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { newEvmWallet, newMerchant, newSession } from '../helpers/engine.ts';
import { previewDueAmount } from '../../src/payments/duePreview.ts';

/**
 * The due amount a waiting session's x402 challenge asks (src/x402/choiceOffers.ts) is the one the
 * creation's INSERT then picks: after each preview, a session is created and must get exactly
 * the previewed amount, in every branch of the pick (free, one above the top, the first gap once
 * the top reaches the bound, none left). Real Postgres.
 */
const db = useTestDatabase('due_preview');

describe('previewDueAmount', () => {
  test('predicts the pick of the next session on the wallet in every branch', async () => {
    const merchantId = await newMerchant(db.store);
    const wallet = newEvmWallet();
    const preview = (amount: bigint) => previewDueAmount(db.store, { chain: 'polygon', currency: 'USDC', payTo: wallet, amount, decimals: 6 });
    const create = async (amount: string) => (await newSession(db.store, { merchantId, wallet, amount })).amountDue;

    // Free: the plain amount; then one above the highest held.
    expect(await preview(1_000_000n)).toBe(1_000_000n);
    expect(await create('1')).toBe(1_000_000n);
    expect(await preview(1_000_000n)).toBe(1_000_001n);
    expect(await create('1')).toBe(1_000_001n);

    // The top of the range held (a session at 5.009999): the first gap from the bottom.
    expect(await create('5.009999')).toBe(5_009_999n);
    expect(await preview(5_000_000n)).toBe(5_000_000n);
    expect(await create('5')).toBe(5_000_000n);
    expect(await preview(5_000_000n)).toBe(5_000_001n);
    expect(await create('5')).toBe(5_000_001n);

    // Another wallet, chain or currency holds nothing here.
    expect(await previewDueAmount(db.store, { chain: 'base', currency: 'USDC', payTo: wallet, amount: 1_000_000n, decimals: 6 })).toBe(1_000_000n);
    expect(await previewDueAmount(db.store, { chain: 'polygon', currency: 'USDT', payTo: wallet, amount: 1_000_000n, decimals: 6 })).toBe(1_000_000n);
  });

  test('none left: every due amount of the price is held (a 2-decimal bound of 1 on a 3-decimal amount line)', async () => {
    const merchantId = await newMerchant(db.store);
    const wallet = newEvmWallet();
    await newSession(db.store, { merchantId, wallet, amount: '7' });
    // With 2 decimals the bound is 1 base unit: the only candidate is the amount itself, held now.
    expect(await previewDueAmount(db.store, { chain: 'polygon', currency: 'USDC', payTo: wallet, amount: 7_000_000n, decimals: 2 })).toBeUndefined();
  });
});
