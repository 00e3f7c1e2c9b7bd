import { describe, expect, test } from 'vitest';
import fc from 'fast-check';
import { AmountError, formatAmount, formatDisplayAmount, parseAmount } from '../../src/internal/money.ts';

describe('parseAmount() / formatAmount()', () => {
  test('parses decimal text into base units at the token decimals', () => {
    expect(parseAmount('12.5', 6)).toBe(12_500_000n);
    expect(parseAmount('0.000001', 6)).toBe(1n);
    expect(parseAmount('100', 18)).toBe(100n * 10n ** 18n);
    expect(parseAmount('0.000000000000000001', 18)).toBe(1n);
    expect(parseAmount('115792089237316195423570985008687907853269984665640564039457.584007913129639935', 18)).toBe(2n ** 256n - 1n);
  });

  test('refuses more decimals than the token has, rather than rounding', () => {
    expect(() => parseAmount('0.0000001', 6)).toThrow(new AmountError('amount 0.0000001 has 7 decimal places; this token has 6'));
  });

  test.each(['', '-1', '+1', '1e6', '01', '1.', '.5', ' 1', '1 ', '1,5', '0x10', 'NaN', 'Infinity', '1..2'])('refuses %j', (text) => {
    expect(() => parseAmount(text, 6)).toThrow(AmountError);
  });

  test('formats without trailing zeros', () => {
    expect(formatAmount(12_500_000n, 6)).toBe('12.5');
    expect(formatAmount(1n, 6)).toBe('0.000001');
    expect(formatAmount(0n, 6)).toBe('0');
    expect(formatAmount(10n ** 20n, 18)).toBe('100');
  });

  test('format then parse is the identity for every amount and decimals', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 2n ** 256n - 1n }), fc.integer({ min: 0, max: 18 }), (units, decimals) => {
        expect(parseAmount(formatAmount(units, decimals), decimals)).toBe(units);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('formatDisplayAmount()', () => {
  test('keeps at least two decimals (the currency’s cents) and every significant one beyond', () => {
    expect(formatDisplayAmount(5_000_000n, 6)).toBe('5.00');
    expect(formatDisplayAmount(19_900_000n, 6)).toBe('19.90');
    expect(formatDisplayAmount(1_000_050n, 6)).toBe('1.00005');
    expect(formatDisplayAmount(1n, 6)).toBe('0.000001');
    expect(formatDisplayAmount(123n * 10n ** 18n, 18)).toBe('123.00');
    expect(formatDisplayAmount(0n, 6)).toBe('0.00');
  });
});
