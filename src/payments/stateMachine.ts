import { NonRetryableError } from '../internal/errors.ts';
import type { EventType } from './outbox.ts';

/** The payment session states of spec §3. */
export const PAYMENT_STATUSES = ['created', 'pending', 'confirming', 'confirmed', 'settled', 'expired', 'failed'] as const;
export type PaymentStatus = (typeof PAYMENT_STATUSES)[number];

/**
 * Why a transition happened. One (from, to) pair can have two causes with different events
 * (confirming -> confirmed is `payment.confirmed` on time and `payment.late_confirmed` late).
 */
export type TransitionCause =
  | 'detected'
  | 'paid'
  | 'paid_late'
  | 'underpaid'
  | 'underpaid_expired'
  | 'underpaid_late'
  | 'expired'
  | 'reorg'
  | 'deep_reorg'
  | 'finalized';

/** One allowed transition and the event it writes to the outbox. */
export interface Transition {
  from: PaymentStatus;
  to: PaymentStatus;
  cause: TransitionCause;
  event: EventType;
  /** Events that may follow the main one in the same step (`payment.overpaid` on confirmation). */
  extra?: readonly EventType[];
}

/**
 * Every allowed transition of a payment session, and the only place they are listed: anything
 * not in this table is refused by `assertTransition`. docs/payment-lifecycle.md
 * is this table.
 *
 * - `created`: nothing counted yet (Interface B shows it as `pending`).
 * - `confirming`: a matched transfer is on chain and waits for the chain's confirmation rule.
 * - `pending`: part of the due amount is confirmed; the session waits for the rest until expiry.
 * - `confirmed`: the confirmed total covers the due amount (less the merchant's tolerance).
 * - `settled`: every counted transfer is final (at or below the chain's finalized block).
 * - `expired`: the session expired with nothing received; `failed`: it expired with only part.
 *   Both still accept payments until the monitoring window ends (late payments).
 */
export const TRANSITIONS: readonly Transition[] = [
  { from: 'created', to: 'confirming', cause: 'detected', event: 'payment.confirming' },
  { from: 'pending', to: 'confirming', cause: 'detected', event: 'payment.confirming' },
  { from: 'expired', to: 'confirming', cause: 'detected', event: 'payment.confirming' },
  { from: 'failed', to: 'confirming', cause: 'detected', event: 'payment.confirming' },
  { from: 'confirming', to: 'confirmed', cause: 'paid', event: 'payment.confirmed', extra: ['payment.overpaid'] },
  { from: 'confirming', to: 'confirmed', cause: 'paid_late', event: 'payment.late_confirmed', extra: ['payment.overpaid'] },
  { from: 'confirming', to: 'pending', cause: 'underpaid', event: 'payment.underpaid' },
  { from: 'confirming', to: 'failed', cause: 'underpaid_expired', event: 'payment.failed' },
  { from: 'confirming', to: 'failed', cause: 'underpaid_late', event: 'payment.underpaid' },
  { from: 'confirming', to: 'created', cause: 'reorg', event: 'payment.reorged' },
  { from: 'confirming', to: 'pending', cause: 'reorg', event: 'payment.reorged' },
  { from: 'confirming', to: 'expired', cause: 'reorg', event: 'payment.reorged' },
  { from: 'confirming', to: 'failed', cause: 'reorg', event: 'payment.reorged' },
  { from: 'created', to: 'expired', cause: 'expired', event: 'payment.expired' },
  { from: 'pending', to: 'failed', cause: 'underpaid_expired', event: 'payment.failed' },
  { from: 'confirmed', to: 'settled', cause: 'finalized', event: 'payment.settled' },
  { from: 'confirmed', to: 'confirming', cause: 'deep_reorg', event: 'payment.reorged' },
  { from: 'confirmed', to: 'pending', cause: 'deep_reorg', event: 'payment.reorged' },
  { from: 'confirmed', to: 'created', cause: 'deep_reorg', event: 'payment.reorged' },
  { from: 'pending', to: 'created', cause: 'deep_reorg', event: 'payment.reorged' },
];

/** A transition that `TRANSITIONS` does not list. Always a bug in the engine, never bad input. */
export class IllegalTransitionError extends NonRetryableError {
  override name = 'IllegalTransitionError';
}

/**
 * The table row for `from -> to` with `cause`.
 * @throws {IllegalTransitionError} when the table has no such row.
 */
export function assertTransition(from: PaymentStatus, to: PaymentStatus, cause: TransitionCause): Transition {
  const row = TRANSITIONS.find((t) => t.from === from && t.to === to && t.cause === cause);
  if (!row) throw new IllegalTransitionError(`payment transition ${from} -> ${to} (${cause}) is not allowed`);
  return row;
}

/** Whether any cause allows `from -> to`. */
export function canTransition(from: PaymentStatus, to: PaymentStatus): boolean {
  return TRANSITIONS.some((t) => t.from === from && t.to === to);
}
