import { describe, expect, test } from 'vitest';
import { amountOutsideLimits } from '../../src/x402/facilitator.ts';
import { AMOUNT_LIMITS, SETTLEMENT_MIN_AMOUNT } from '../../src/payments/terms.ts';

/**
 * The facilitator's amount limits in base units (issue 29): 0.001 token at the token's decimals
 * (6 for USDC/USDT on most chains, 18 on bsc) up to a session's maximum; sessions made otherwise
 * keep 0.01. The end-to-end cases are in e2e.anvil.test.ts and svmFacilitator.solana.test.ts.
 */
describe('amountOutsideLimits', () => {
  test('0.001 token is the floor at 6 decimals (1000 base units) and at 18 (10^15); one base unit less is refused, naming it', () => {
    expect(SETTLEMENT_MIN_AMOUNT).toBe('0.001');
    expect(AMOUNT_LIMITS.min).toBe('0.01');
    expect(amountOutsideLimits(1_000n, 6)).toBeUndefined();
    expect(amountOutsideLimits(10n ** 15n, 18)).toBeUndefined();
    expect(amountOutsideLimits(999n, 6)).toBe(
      "the amount 0.000999 is below this gateway's minimum x402 settlement of 0.001 (1000 base units): below it the settlement's gas costs about as much as the payment moves",
    );
    expect(amountOutsideLimits(10n ** 15n - 1n, 18)).toMatch(/^the amount 0\.000999999999999999 is below .* of 0\.001 \(1000000000000000 base units\)/);
    expect(amountOutsideLimits(1n, 6)).toMatch(/below/);
  });

  test('the maximum stays a session’s', () => {
    expect(amountOutsideLimits(1_000_000n * 10n ** 6n, 6)).toBeUndefined();
    expect(amountOutsideLimits(1_000_000n * 10n ** 6n + 1n, 6)).toMatch(/above this gateway's maximum payment of 1000000/);
    expect(amountOutsideLimits(1_000_000n * 10n ** 18n + 1n, 18)).toMatch(/above/);
  });
});
