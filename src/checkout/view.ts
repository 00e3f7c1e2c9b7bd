import type { Sql } from '../store/index.ts';
import type { ChainName } from '../internal/config.ts';
import type { Currency } from '../internal/chains.ts';

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

/** One session as the checkout reads it: money in bigint base units. */
export interface CheckoutSession {
  id: string;
  merchantId: string;
  merchantName: string;
  livemode: boolean;
  status: string;
  chain: ChainName;
  currency: Currency;
  decimals: number;
  amount: bigint;
  amountDue: bigint;
  /** Confirmed money (the API's `amountReceived`): all a refund may count. */
  amountReceived: bigint;
  /** Seen on chain, not confirmed yet: on its way, so not asked for again, but not refundable. */
  amountPending: bigint;
  tokenAddresses: string[];
  payTo: string;
  reference: string | null;
  txHash: string | null;
  confirmations: number;
  requiredConfirmations: number;
  successUrl: string | null;
  createdAt: Date;
  expiresAt: Date;
  confirmedAt: Date | null;
  /** The database's clock when the row was read, so expiry agrees with the engine's. */
  now: Date;
}

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
  const { rows } = await sql.query<Record<string, unknown>>(
    `SELECT s.id, s.merchant_id, m.name AS merchant_name, s.livemode, s.status, s.chain, s.currency, s.decimals,
       s.amount::text, s.amount_due::text, s.amount_received::text, s.amount_confirmed::text, s.token_addresses, s.pay_to, s.reference, s.tx_hash,
       s.confirmations, s.required_confirmations, s.success_url, s.created_at, s.expires_at, s.confirmed_at, now() AS now
     FROM payment_sessions s JOIN merchants m ON m.id = s.merchant_id
     WHERE s.id = ANY($1::text[])`,
    [wanted],
  );
  return new Map(rows.map((row) => [row.id as string, toCheckoutSession(row)]));
}

function toCheckoutSession(row: Record<string, unknown>): CheckoutSession {
  return {
    id: row.id as string,
    merchantId: row.merchant_id as string,
    merchantName: row.merchant_name as string,
    livemode: row.livemode as boolean,
    status: row.status as string,
    chain: row.chain as ChainName,
    currency: row.currency as Currency,
    decimals: Number(row.decimals),
    amount: BigInt(row.amount as string),
    amountDue: BigInt(row.amount_due as string),
    amountReceived: BigInt(row.amount_confirmed as string),
    amountPending: pendingOf(BigInt(row.amount_received as string), BigInt(row.amount_confirmed as string)),
    tokenAddresses: row.token_addresses as string[],
    payTo: row.pay_to as string,
    // Solana Pay only (the sandbox's EVM routing key is not the payer's business; see api/views.ts).
    reference: row.chain === 'solana' ? ((row.reference as string | null) ?? null) : null,
    txHash: (row.tx_hash as string | null) ?? null,
    confirmations: Number(row.confirmations),
    requiredConfirmations: Number(row.required_confirmations),
    successUrl: (row.success_url as string | null) ?? null,
    createdAt: row.created_at as Date,
    expiresAt: row.expires_at as Date,
    confirmedAt: (row.confirmed_at as Date | null) ?? null,
    now: row.now as Date,
  };
}

/** The engine's counted total less its confirmed part, never below zero. */
const pendingOf = (counted: bigint, confirmed: bigint): bigint => (counted > confirmed ? counted - confirmed : 0n);

/** What is left to pay: the due amount less what arrived, confirmed or pending, never below zero. */
export function amountRemaining(session: Pick<CheckoutSession, 'amountDue' | 'amountReceived' | 'amountPending'>): bigint {
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
