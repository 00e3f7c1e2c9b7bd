import type { EventType } from '../payments/outbox.ts';
import { assertTransition, type PaymentStatus, type Transition, type TransitionCause } from '../payments/stateMachine.ts';

/**
 * What the engine knows about one session at one instant: pure data, read from the rows under
 * lock. `nextStep` turns it into at most one transition; the engine applies steps until none is
 * left, so a session that jumps (a backfilled transfer already deep enough) still walks
 * `created -> confirming -> confirmed` and the merchant gets every event in order.
 */
export interface SessionFacts {
  status: PaymentStatus;
  amountDue: bigint;
  /** Merchant's payment tolerance in basis points of the due amount (0..1000). */
  toleranceBps: number;
  /** `amount_received` as stored before this step: what the engine counted last time. */
  storedReceived: bigint;
  /** The received total last reported in a confirmed/overpaid event. */
  reportedReceived: bigint;
  /** Sum of the matched transfers that count now (status observed). */
  received: bigint;
  /** Part of `received` whose transfers meet the chain's confirmation rule. */
  confirmedReceived: bigint;
  /** Counted transfers that do not meet the confirmation rule yet. */
  unconfirmedCount: number;
  /** Every counted transfer is at or below the chain's finalized block (false when none). */
  allSettled: boolean;
  /** `now >= expires_at`. */
  pastExpiry: boolean;
  /** The session already went through `expired` / `failed` (their events were sent). */
  expiredBefore: boolean;
  failedBefore: boolean;
  /** The newest counted transfer was paid (block time) after `expires_at`. */
  paidAfterExpiry: boolean;
}

/** One step: a table transition, or a notice (an event without a state change). */
export type Step = { kind: 'transition'; transition: Transition; events: EventType[] } | { kind: 'notice'; event: EventType };

/** Whether `received` pays `amountDue`, allowing the merchant's tolerance. */
export function covers(received: bigint, amountDue: bigint, toleranceBps: number): boolean {
  return received > 0n && received * 10_000n >= amountDue * BigInt(10_000 - toleranceBps);
}

function go(from: PaymentStatus, to: PaymentStatus, cause: TransitionCause, overpaid = false): Step {
  const transition = assertTransition(from, to, cause);
  return { kind: 'transition', transition, events: overpaid ? [transition.event, 'payment.overpaid'] : [transition.event] };
}

/** Where a reorg that took money away sends a session that had not been confirmed. */
function afterReorg(f: SessionFacts): PaymentStatus {
  if (f.failedBefore) return 'failed';
  if (f.received === 0n) return f.expiredBefore ? 'expired' : 'created';
  return 'pending';
}

/**
 * The next step for a session, or null when it is where the facts say it should be. Pure: the
 * property test checks the engine built on it against an independent model.
 */
export function nextStep(f: SessionFacts): Step | null {
  const gained = f.received > f.storedReceived;
  const lost = f.received < f.storedReceived;
  switch (f.status) {
    case 'created':
      if (f.received > 0n) return go('created', 'confirming', 'detected');
      if (f.pastExpiry) return go('created', 'expired', 'expired');
      return null;
    case 'pending':
      if (gained || f.unconfirmedCount > 0) return go('pending', 'confirming', 'detected');
      if (f.received === 0n && lost) return go('pending', 'created', 'deep_reorg');
      if (f.pastExpiry) return go('pending', 'failed', 'underpaid_expired');
      return null;
    case 'expired':
    case 'failed':
      if (gained) return go(f.status, 'confirming', 'detected');
      return null;
    case 'confirming': {
      if (f.unconfirmedCount > 0) return null;
      if (covers(f.confirmedReceived, f.amountDue, f.toleranceBps)) {
        const late = (f.expiredBefore || f.failedBefore) && f.paidAfterExpiry;
        return go('confirming', 'confirmed', late ? 'paid_late' : 'paid', f.confirmedReceived > f.amountDue);
      }
      if (lost || f.received === 0n) return go('confirming', afterReorg(f), 'reorg');
      if (f.failedBefore) return go('confirming', 'failed', 'underpaid_late');
      if (f.pastExpiry) return go('confirming', 'failed', 'underpaid_expired');
      return go('confirming', 'pending', 'underpaid');
    }
    case 'confirmed':
      if (!covers(f.received, f.amountDue, f.toleranceBps)) {
        return go('confirmed', f.unconfirmedCount > 0 ? 'confirming' : f.received === 0n ? 'created' : 'pending', 'deep_reorg');
      }
      if (f.confirmedReceived > f.reportedReceived && f.confirmedReceived > f.amountDue) return { kind: 'notice', event: 'payment.overpaid' };
      if (f.allSettled) return go('confirmed', 'settled', 'finalized');
      return null;
    case 'settled':
      if (f.confirmedReceived > f.reportedReceived && f.confirmedReceived > f.amountDue) return { kind: 'notice', event: 'payment.overpaid' };
      return null;
  }
}
