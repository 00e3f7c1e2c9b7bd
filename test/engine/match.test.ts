import { describe, expect, test } from 'vitest';
import { CLOCK_SKEW_SECONDS, chooseSession, type TransferToMatch } from '../../src/engine/match.ts';

const now = new Date('2026-11-21T12:00:00Z');
const minutes = (n: number) => new Date(now.getTime() + n * 60_000);

function session(id: string, due: bigint, received = 0n, extra: Record<string, unknown> = {}) {
  return {
    id,
    status: received > 0n ? 'pending' : 'created',
    amountDue: due,
    received,
    tokenAddresses: ['T'],
    payTo: 'W',
    livemode: true,
    chain: 'polygon',
    createdAt: minutes(-10),
    monitorUntil: minutes(60),
    toleranceBps: 0,
    ...extra,
  } as Parameters<typeof chooseSession>[1][number];
}

const transfer = (amount: bigint, paidAt = now): TransferToMatch => ({
  id: 1n,
  tx_hash: '0x01',
  livemode: true,
  chain: 'polygon',
  token_address: 'T',
  to_address: 'W',
  amount: String(amount),
  reference_keys: [],
  paid_at: paidAt,
});

describe('chooseSession() rules, in order', () => {
  test('exact due amount wins, and prefers an unpaid session over a paid one with the same due amount', () => {
    const paid = session('a', 100n, 0n, { status: 'confirmed', received: '100' });
    expect(chooseSession(transfer(100n), [paid, session('b', 100n), session('c', 101n)])?.id).toBe('b');
    expect(chooseSession(transfer(100n), [paid, session('c', 101n)])?.id).toBe('a');
  });

  test('a top-up of exactly the missing amount goes to that partly paid session even when others wait', () => {
    expect(chooseSession(transfer(60n), [session('a', 200n), session('b', 100n, 40n), session('c', 300n)])?.id).toBe('b');
  });

  test('within the merchant tolerance of exactly one unpaid session', () => {
    const tolerant = (id: string, due: bigint) => session(id, due, 0n, { toleranceBps: 100 });
    expect(chooseSession(transfer(995n), [tolerant('a', 1000n), tolerant('b', 5000n)])?.id).toBe('a');
    expect(chooseSession(transfer(995n), [tolerant('a', 1000n), tolerant('b', 1001n)])).toBeUndefined();
  });

  test('the only session waiting on the wallet takes an under- or overpayment up to twice what is missing', () => {
    expect(chooseSession(transfer(30n), [session('a', 100n)])?.id).toBe('a');
    expect(chooseSession(transfer(200n), [session('a', 100n)])?.id).toBe('a');
    expect(chooseSession(transfer(201n), [session('a', 100n)])).toBeUndefined();
    expect(chooseSession(transfer(30n), [session('a', 100n), session('b', 100n)])).toBeUndefined();
  });

  test('the payment time must fall between creation (less the clock skew) and the end of the monitoring window', () => {
    const s = session('a', 100n);
    expect(chooseSession(transfer(100n, new Date(s.createdAt.getTime() - CLOCK_SKEW_SECONDS * 1000)), [s])?.id).toBe('a');
    expect(chooseSession(transfer(100n, new Date(s.createdAt.getTime() - CLOCK_SKEW_SECONDS * 1000 - 1)), [s])).toBeUndefined();
    expect(chooseSession(transfer(100n, minutes(61)), [s])).toBeUndefined();
  });
});
