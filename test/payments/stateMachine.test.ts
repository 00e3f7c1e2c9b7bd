import { describe, expect, test } from 'vitest';
import { PAYMENT_STATUSES, TRANSITIONS, assertTransition, canTransition, type PaymentStatus } from '../../src/payments/stateMachine.ts';
import { nextStep, type SessionFacts } from '../../src/engine/decide.ts';

const base: SessionFacts = {
  status: 'created',
  amountDue: 100n,
  toleranceBps: 0,
  storedReceived: 0n,
  reportedReceived: 0n,
  received: 0n,
  confirmedReceived: 0n,
  unconfirmedCount: 0,
  allSettled: false,
  pastExpiry: false,
  expiredBefore: false,
  failedBefore: false,
  paidAfterExpiry: false,
};

/**
 * For every row of the transition table, facts that make `nextStep` take exactly that row (and
 * the events it must emit). Adding a row to TRANSITIONS without a case here fails the test.
 */
const CASES: Record<string, { facts: Partial<SessionFacts>; events: string[] }> = {
  'created>confirming:detected': { facts: { received: 100n, unconfirmedCount: 1 }, events: ['payment.confirming'] },
  'pending>confirming:detected': {
    facts: { status: 'pending', storedReceived: 40n, received: 100n, confirmedReceived: 40n, unconfirmedCount: 1 },
    events: ['payment.confirming'],
  },
  'expired>confirming:detected': {
    facts: { status: 'expired', expiredBefore: true, pastExpiry: true, received: 100n, unconfirmedCount: 1 },
    events: ['payment.confirming'],
  },
  'failed>confirming:detected': {
    facts: { status: 'failed', failedBefore: true, pastExpiry: true, storedReceived: 40n, received: 100n, confirmedReceived: 40n, unconfirmedCount: 1 },
    events: ['payment.confirming'],
  },
  'confirming>confirmed:paid': {
    facts: { status: 'confirming', storedReceived: 100n, received: 100n, confirmedReceived: 100n },
    events: ['payment.confirmed'],
  },
  'confirming>confirmed:paid_late': {
    facts: {
      status: 'confirming',
      expiredBefore: true,
      pastExpiry: true,
      paidAfterExpiry: true,
      storedReceived: 100n,
      received: 100n,
      confirmedReceived: 100n,
    },
    events: ['payment.late_confirmed'],
  },
  'confirming>pending:underpaid': {
    facts: { status: 'confirming', storedReceived: 40n, received: 40n, confirmedReceived: 40n },
    events: ['payment.underpaid'],
  },
  'confirming>failed:underpaid_expired': {
    facts: { status: 'confirming', pastExpiry: true, storedReceived: 40n, received: 40n, confirmedReceived: 40n },
    events: ['payment.failed'],
  },
  'confirming>failed:underpaid_late': {
    facts: { status: 'confirming', failedBefore: true, pastExpiry: true, storedReceived: 70n, received: 70n, confirmedReceived: 70n },
    events: ['payment.underpaid'],
  },
  'confirming>created:reorg': { facts: { status: 'confirming', storedReceived: 100n, received: 0n }, events: ['payment.reorged'] },
  'confirming>pending:reorg': { facts: { status: 'confirming', storedReceived: 100n, received: 40n, confirmedReceived: 40n }, events: ['payment.reorged'] },
  'confirming>expired:reorg': {
    facts: { status: 'confirming', expiredBefore: true, pastExpiry: true, storedReceived: 100n, received: 0n },
    events: ['payment.reorged'],
  },
  'confirming>failed:reorg': {
    facts: { status: 'confirming', failedBefore: true, pastExpiry: true, storedReceived: 100n, received: 40n, confirmedReceived: 40n },
    events: ['payment.reorged'],
  },
  'created>expired:expired': { facts: { pastExpiry: true }, events: ['payment.expired'] },
  'pending>failed:underpaid_expired': {
    facts: { status: 'pending', pastExpiry: true, storedReceived: 40n, received: 40n, confirmedReceived: 40n },
    events: ['payment.failed'],
  },
  'confirmed>settled:finalized': {
    facts: { status: 'confirmed', storedReceived: 100n, reportedReceived: 100n, received: 100n, confirmedReceived: 100n, allSettled: true },
    events: ['payment.settled'],
  },
  'confirmed>confirming:deep_reorg': {
    facts: { status: 'confirmed', storedReceived: 100n, reportedReceived: 100n, received: 60n, confirmedReceived: 40n, unconfirmedCount: 1 },
    events: ['payment.reorged'],
  },
  'confirmed>pending:deep_reorg': {
    facts: { status: 'confirmed', storedReceived: 100n, reportedReceived: 100n, received: 40n, confirmedReceived: 40n },
    events: ['payment.reorged'],
  },
  'confirmed>created:deep_reorg': { facts: { status: 'confirmed', storedReceived: 100n, reportedReceived: 100n, received: 0n }, events: ['payment.reorged'] },
  'pending>created:deep_reorg': { facts: { status: 'pending', storedReceived: 40n, received: 0n }, events: ['payment.reorged'] },
};

const key = (from: string, to: string, cause: string) => `${from}>${to}:${cause}`;

describe('payment state machine', () => {
  test('every table row has a case, and every case is a table row', () => {
    expect(new Set(TRANSITIONS.map((t) => key(t.from, t.to, t.cause)))).toEqual(new Set(Object.keys(CASES)));
  });

  test.each(TRANSITIONS.map((t) => [key(t.from, t.to, t.cause), t] as const))('nextStep() takes %s and emits its event', (name, transition) => {
    const { facts, events } = CASES[name]!;
    const step = nextStep({ ...base, ...facts });
    expect(step?.kind).toBe('transition');
    if (step?.kind !== 'transition') return;
    expect(step.transition).toBe(transition);
    expect(step.events).toEqual(events);
    expect(step.events[0]).toBe(transition.event);
  });

  const allPairs = PAYMENT_STATUSES.flatMap((from) => PAYMENT_STATUSES.map((to) => [from, to] as [PaymentStatus, PaymentStatus]));
  const disallowed = allPairs.filter(([from, to]) => !TRANSITIONS.some((t) => t.from === from && t.to === to));

  test.each(disallowed)('%s -> %s is refused', (from, to) => {
    expect(canTransition(from, to)).toBe(false);
    for (const cause of ['detected', 'paid', 'reorg', 'deep_reorg', 'expired', 'finalized'] as const) {
      expect(() => assertTransition(from, to, cause)).toThrow(`payment transition ${from} -> ${to} (${cause}) is not allowed`);
    }
  });

  test('an allowed pair with the wrong cause is refused', () => {
    expect(() => assertTransition('created', 'expired', 'paid')).toThrowErrorMatchingInlineSnapshot(
      `[IllegalTransitionError: payment transition created -> expired (paid) is not allowed]`,
    );
  });

  test('settled is terminal and nothing leaves confirmed except settlement or an alerted deep reorg', () => {
    expect(TRANSITIONS.filter((t) => t.from === 'settled')).toEqual([]);
    expect(TRANSITIONS.filter((t) => t.from === 'confirmed').every((t) => t.cause === 'finalized' || t.cause === 'deep_reorg')).toBe(true);
  });

  test('overpayment adds payment.overpaid after payment.confirmed', () => {
    const step = nextStep({ ...base, status: 'confirming', storedReceived: 150n, received: 150n, confirmedReceived: 150n });
    expect(step?.kind === 'transition' && step.events).toEqual(['payment.confirmed', 'payment.overpaid']);
  });

  test('tolerance: 99.5% of the due amount confirms with 50 bps tolerance, not with 0', () => {
    const facts = { ...base, amountDue: 1000n, status: 'confirming' as const, storedReceived: 995n, received: 995n, confirmedReceived: 995n };
    expect(nextStep({ ...facts, toleranceBps: 50 })).toMatchObject({ transition: { to: 'confirmed' } });
    expect(nextStep({ ...facts, toleranceBps: 0 })).toMatchObject({ transition: { to: 'pending' } });
  });

  test('money after confirmation is a payment.overpaid notice, once', () => {
    const facts = { ...base, status: 'confirmed' as const, storedReceived: 100n, reportedReceived: 100n, received: 130n, confirmedReceived: 130n };
    expect(nextStep(facts)).toEqual({ kind: 'notice', event: 'payment.overpaid' });
    expect(nextStep({ ...facts, reportedReceived: 130n })).toBeNull();
  });

  test('a session in flight does not expire', () => {
    expect(nextStep({ ...base, status: 'confirming', pastExpiry: true, storedReceived: 100n, received: 100n, unconfirmedCount: 1 })).toBeNull();
  });
});
