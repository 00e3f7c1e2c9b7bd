import { expect, test } from 'vitest';
import { checkoutViewOf, amountRemaining, isSessionId } from '../../src/checkout/view.ts';
import type { PaymentStatus } from '../../src/payments/stateMachine.ts';
import { eip681Uri, solanaPayUri } from '../../src/checkout/uris.ts';
import { formatCountdown } from '../../src/checkout/page.ts';

const now = new Date('2026-11-21T12:00:00Z');
const before = new Date('2026-11-21T12:10:00Z');
const after = new Date('2026-11-21T11:59:59Z');

test('checkoutViewOf maps every status, before and after expiry', () => {
  const view = (status: PaymentStatus, expiresAt: Date) => checkoutViewOf({ status, expiresAt, now, amountReceived: 0n });
  expect(
    (['created', 'pending', 'confirming', 'confirmed', 'settled', 'expired', 'failed'] as const).map((status) => [
      status,
      view(status, before),
      view(status, after),
    ]),
  ).toEqual([
    ['created', 'awaiting', 'expired'],
    ['pending', 'underpaid', 'failed'],
    ['confirming', 'detected', 'detected'],
    ['confirmed', 'paid', 'paid'],
    ['settled', 'paid', 'paid'],
    ['expired', 'expired', 'expired'],
    ['failed', 'failed', 'failed'],
  ]);
  // Exactly at expires_at the session is over (the engine's rule is now >= expires_at).
  expect(view('created', now)).toBe('expired');
});

test('amountRemaining never goes below zero on overpayment', () => {
  expect(amountRemaining({ amountDue: 10n, amountReceived: 4n, amountPending: 0n })).toBe(6n);
  expect(amountRemaining({ amountDue: 10n, amountReceived: 12n, amountPending: 0n })).toBe(0n);
});

test('amountRemaining counts pending money as on its way: the payer is not asked to pay twice', () => {
  expect(amountRemaining({ amountDue: 10n, amountReceived: 0n, amountPending: 10n })).toBe(0n);
  expect(amountRemaining({ amountDue: 10n, amountReceived: 4n, amountPending: 3n })).toBe(3n);
});

test('isSessionId accepts only ses_ and 20 base62 characters', () => {
  expect(isSessionId('ses_0123456789abcdefABCD')).toBe(true);
  expect(isSessionId('ses_0123456789abcdefABC')).toBe(false);
  expect(isSessionId('ses_0123456789abcdefABC!')).toBe(false);
  expect(isSessionId('pay_0123456789abcdefABCD')).toBe(false);
});

test('wallet URIs: EIP-681 in base units, Solana Pay in decimal text with %20 for spaces', () => {
  expect(eip681Uri({ token: '0xT', chainId: 56, recipient: '0xR', baseUnits: 10n ** 18n + 1n })).toBe(
    'ethereum:0xT@56/transfer?address=0xR&uint256=1000000000000000001',
  );
  expect(solanaPayUri({ recipient: 'Rcp', mint: 'Mnt', amount: '0.000001', reference: null, label: 'A & B', message: 'Pay #1' })).toBe(
    'solana:Rcp?amount=0.000001&spl-token=Mnt&label=A%20%26%20B&message=Pay%20%231',
  );
});

test('formatCountdown writes m:ss under an hour and h:mm:ss from an hour', () => {
  expect([0, 9, 60, 599, 3599, 3600, 86399].map(formatCountdown)).toEqual(['0:00', '0:09', '1:00', '9:59', '59:59', '1:00:00', '23:59:59']);
});
