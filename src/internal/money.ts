/**
 * Money is bigint base units everywhere inside the daemon and decimal text on the wire. These
 * two functions are the only place the two meet; nothing here touches a JS number.
 */

import { NonRetryableError } from './errors.ts';

/** Why an amount text was refused, said so the client can fix it. */
export class AmountError extends NonRetryableError {
  override name = 'AmountError';
}

const DECIMAL = /^(0|[1-9]\d*)(?:\.(\d+))?$/;

/**
 * Parses decimal text ("12.5") into base units at `decimals` (12500000n at 6). Refuses, rather
 * than rounds, an amount with more fractional digits than the token has; refuses signs,
 * exponents, leading zeros, spaces and empty parts.
 */
export function parseAmount(text: string, decimals: number): bigint {
  const match = DECIMAL.exec(text);
  if (!match) throw new AmountError(`amount ${JSON.stringify(text)} must be decimal text such as "12.50" (digits, one optional point, no sign or exponent)`);
  const whole = match[1]!;
  const fraction = match[2] ?? '';
  if (fraction.length > decimals) {
    throw new AmountError(`amount ${text} has ${fraction.length} decimal places; this token has ${decimals}`);
  }
  return BigInt(whole) * 10n ** BigInt(decimals) + BigInt(fraction.padEnd(decimals, '0') || '0');
}

/**
 * Decimals a stablecoin amount is shown with at least ("19.90 USDC", "5.00 USDT"): cents, as
 * people read dollar stablecoins. More are kept when the amount has them ("0.000001").
 */
export const DISPLAY_DECIMALS = 2;

/** Base units as decimal text for people: {@link formatAmount}, padded to at least {@link DISPLAY_DECIMALS} decimals ("5.00", "19.90", "1.00005"). */
export function formatDisplayAmount(units: bigint, decimals: number): string {
  return displayDecimal(formatAmount(units, decimals), decimals);
}

/**
 * Decimal text (as {@link formatAmount} makes it, "19.9") padded for people to at least
 * {@link DISPLAY_DECIMALS} places, never more than the token's `decimals` ("19.90"). Text only:
 * the digits are never parsed into a number, so nothing is rounded.
 */
export function displayDecimal(text: string, decimals: number): string {
  const places = Math.min(DISPLAY_DECIMALS, decimals);
  const [whole, fraction = ''] = text.split('.');
  return fraction.length >= places ? text : `${whole}.${fraction.padEnd(places, '0')}`;
}

/** Formats base units as decimal text without trailing zeros ("12.5", "100", "0.000001"). */
export function formatAmount(units: bigint, decimals: number): string {
  const negative = units < 0n;
  const digits = (negative ? -units : units).toString().padStart(decimals + 1, '0');
  const whole = digits.slice(0, digits.length - decimals);
  const fraction = digits.slice(digits.length - decimals).replace(/0+$/, '');
  return `${negative ? '-' : ''}${whole}${fraction ? `.${fraction}` : ''}`;
}
