import type { Sql } from '../store/index.ts';
import type { Session } from '../payments/session.ts';
import { getSessionsWithMerchant, type SessionMerchantBrand } from '../payments/sessions.ts';

/**
 * What the payer sees of a session: the status that the page shows (a refinement of the
 * session's status that also reads the clock and the amounts).
 *
 * - `awaiting`: nothing received yet, before expiry.
 * - `detected`: a transfer is on chain and waits for confirmations (`confirming`).
 * - `underpaid`: part of the due amount arrived and is confirmed (`pending`) before expiry.
 * - `paid`: `confirmed` or `settled`.
 * - `expired`: nothing arrived before expiry (`expired`, or `created` past `expires_at`).
 * - `failed`: expired with only part paid (`failed`, or `pending` past `expires_at`).
 */
export const CHECKOUT_VIEWS = ['awaiting', 'detected', 'underpaid', 'paid', 'expired', 'failed'] as const;
export type CheckoutView = (typeof CHECKOUT_VIEWS)[number];

/** The session fields the checkout reads. */
const CHECKOUT_FIELDS = [
  'id',
  'merchantId',
  'livemode',
  'status',
  'chain',
  'currency',
  'decimals',
  'amount',
  'amountDue',
  'amountReceived',
  'amountPending',
  'tokenAddresses',
  'payTo',
  'attribution',
  'depositAddress',
  'reference',
  'txHash',
  'confirmations',
  'requiredConfirmations',
  'successUrl',
  'cancelUrl',
  'description',
  'lineItems',
  'price',
  'priceQuote',
  'createdAt',
  'expiresAt',
  'confirmedAt',
  'paymentLinkId',
] as const satisfies readonly (keyof Session)[];

/**
 * One session as the checkout reads it, with its merchant's name and brand and the database's clock when
 * the row was read (so expiry agrees with the engine's). `amountReceived` is confirmed money, all
 * a refund may count; `amountPending` is on its way, so not asked for again, but not refundable.
 */
export type CheckoutSession = Pick<Session, (typeof CHECKOUT_FIELDS)[number]> & { merchantName: string; merchantBrand: SessionMerchantBrand; now: Date };

/** Session ids are `ses_` and 20 base62 characters (see newId); anything else cannot exist. */
const SESSION_ID = /^ses_[0-9A-Za-z]{20}$/;

/** Whether `text` has the shape of a session id (checked before touching the database). */
export function isSessionId(text: string): boolean {
  return SESSION_ID.test(text);
}

/**
 * Reads one session and its merchant's name by id alone: the id is the capability that the
 * customer holds (as Stripe's checkout session URL), so no key or merchant is needed. `now` is
 * the database's clock, so expiry is judged on one clock.
 * @returns undefined when there is no such session.
 */
export async function loadCheckoutSession(sql: Sql, id: string): Promise<CheckoutSession | undefined> {
  return (await loadCheckoutSessions(sql, [id])).get(id);
}

/** Many sessions in one query (the live feeds of all open pages read together), by id. */
export async function loadCheckoutSessions(sql: Sql, ids: string[]): Promise<Map<string, CheckoutSession>> {
  const wanted = ids.filter(isSessionId);
  if (wanted.length === 0) return new Map();
  return getSessionsWithMerchant(sql, wanted, CHECKOUT_FIELDS);
}

/** What is left to pay: the due amount less what arrived, confirmed or pending, never below zero. */
export function amountRemaining(session: Pick<Session, 'amountDue' | 'amountReceived' | 'amountPending'>): bigint {
  const left = session.amountDue - session.amountReceived - session.amountPending;
  return left > 0n ? left : 0n;
}

/**
 * The page's view of a session. Reads the clock as well as the status, because the engine's
 * expiry sweep may lag a few seconds behind `expires_at` and the payer should not be told to
 * pay a session that has just expired.
 */
export function checkoutViewOf(session: Pick<CheckoutSession, 'status' | 'expiresAt' | 'now' | 'amountReceived'>): CheckoutView {
  const pastExpiry = session.now.getTime() >= session.expiresAt.getTime();
  switch (session.status) {
    case 'confirmed':
    case 'settled':
      return 'paid';
    case 'confirming':
      return 'detected';
    case 'pending':
      return pastExpiry ? 'failed' : 'underpaid';
    case 'failed':
      return 'failed';
    case 'expired':
      return 'expired';
    default:
      return pastExpiry ? 'expired' : 'awaiting';
  }
}
