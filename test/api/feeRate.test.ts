import { describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { newMerchant, useApi, WALLET } from '../helpers/api.ts';
import { DEFAULT_FEE_BPS, feeFor } from '../../src/payments/terms.ts';
import { loadConfig } from '../../src/internal/config.ts';
import type { ConfigError } from '../../src/internal/errors.ts';

/** The operator's flat fee (SVC_FEE_BPS), 2.5 % here, where the spec's 1 % is the default. */
const db = useTestDatabase('fee_rate');
const api = useApi(db, { env: { SVC_FEE_BPS: '250' } });

describe('SVC_FEE_BPS', () => {
  test('sessions take the configured rate, and GET /fees states it and sums it', async () => {
    const m = await newMerchant(db.store);
    const created = await api.call('POST', '/api/v1/payments', {
      key: m.test,
      body: { amount: '10', currency: 'USDC', chain: 'base', merchantWallet: WALLET },
    });
    expect(created.status).toBe(201);
    // 2.5 % of 10 USDC (6 decimals): 250000 base units.
    expect(created.body).toMatchObject({ fee: '0.25', feeBaseUnits: '250000' });
    await db.store.query(`UPDATE payment_sessions SET status = 'confirmed' WHERE id = $1`, [created.body.id]);
    const fees = await api.call('GET', '/api/v1/fees', { key: m.test });
    expect(fees.body).toEqual({
      object: 'fee_summary',
      rate: '0.025',
      livemode: false,
      data: [{ chain: 'base', currency: 'USDC', payments: 1, fee: '0.25', feeBaseUnits: '250000' }],
    });
  });

  test('feeFor: the default is the spec’s 1 %, rounded half up to a base unit; 0 charges nothing', () => {
    expect(DEFAULT_FEE_BPS).toBe(100);
    expect(feeFor(10_000_000n)).toBe(100_000n);
    expect(feeFor(150n)).toBe(2n); // 1.5 rounds up
    expect(feeFor(149n)).toBe(1n);
    expect(feeFor(10_000_000n, 250)).toBe(250_000n);
    expect(feeFor(123_456_789n, 0)).toBe(0n);
    expect(feeFor(1n, 10_000)).toBe(1n);
    // An x402 micropayment's 0.001 token (the facilitator's minimum): 1000 base units at 6 decimals, 10^15 at 18 (bsc).
    expect(feeFor(1_000n)).toBe(10n);
    expect(feeFor(10n ** 15n)).toBe(10n ** 13n);
    expect(feeFor(1_000n, 1)).toBe(0n); // 0.1 base unit rounds down to nothing, never below
    expect(feeFor(1_000n, 5)).toBe(1n); // 0.5 rounds up
  });

  test('the variable defaults to 100 and refuses anything but 0..10000 basis points, by name', () => {
    expect(loadConfig({}).feeBps).toBe(100);
    for (const bad of ['1.5', '-1', '10001', 'one']) {
      try {
        loadConfig({ SVC_FEE_BPS: bad });
        throw new Error(`accepted ${bad}`);
      } catch (error) {
        expect((error as ConfigError).problems).toEqual([`SVC_FEE_BPS="${bad}": must be a whole number of basis points from 0 to 10000 (100 = 1 %)`]);
      }
    }
  });
});
