import type { ChainName } from '../internal/config.ts';
import type { Currency } from '../internal/chains.ts';
import type { PaymentStatus } from './stateMachine.ts';
import type { Attribution } from './attribution.ts';
import type { StoredLineItem } from './purchase.ts';
import type { FiatPrice, PriceQuote } from '../pricing/types.ts';
import type { PaymentOption } from './options.ts';

/**
 * The payment session model: one type, one column list, one mapper. Every reader of a
 * `payment_sessions` row (the API's views, the checkout page, the engine's evaluation and
 * matching, the sandbox) takes a `Pick<Session, …>` of this type; the SQL that reads and writes
 * the rows is in sessionSql.ts.
 *
 * Money is bigint base units. The three received amounts follow the wire, not the column names:
 * `amountReceived` is confirmed money (what the API and events call `amountReceived`, and all a
 * refund may count), `amountPending` what is seen on chain but not confirmed yet, and
 * `amountCounted` the engine's total of both (the column `amount_received`).
 */
export interface Session {
  id: string;
  merchantId: string;
  livemode: boolean;
  status: PaymentStatus;
  chain: ChainName;
  currency: Currency;
  /** Decimals of the currency on the chain when the session was made (6, or 18 on bsc). */
  decimals: number;
  /** What the merchant asked for. */
  amount: bigint;
  /** What the payer must send: `amount` plus an offset below one cent that makes it unique on its wallet. */
  amountDue: bigint;
  /** Every counted transfer, confirmed or not: the engine's total (column `amount_received`). */
  amountCounted: bigint;
  /** The part of `amountCounted` that meets the chain's confirmation rule (column `amount_confirmed`; the wire's `amountReceived`). */
  amountReceived: bigint;
  /** Counted but not confirmed yet: `amountCounted - amountReceived`, never below zero (the wire's `amountPending`). */
  amountPending: bigint;
  /** The confirmed money the last payment event reported (column `reported_received`; the engine's bookkeeping). */
  amountReported: bigint;
  /** The flat 1% fee. */
  fee: bigint;
  /** Token contracts (EVM) or mints (solana) that count, canonical form. */
  tokenAddresses: string[];
  /** The merchant's receiving wallet (canonical form): where the money ends, in either mode. */
  payTo: string;
  /**
   * How a payment is told to be this session's: `amount` (a unique due amount on the shared
   * wallet `payTo`) or `address` (EVM only: its own {@link depositAddress}; the due amount is the
   * plain amount). See attribution.ts.
   */
  attribution: Attribution;
  /** `address` mode: the session's own deposit address (canonical form), which forwards only to `payTo`; null in `amount` mode. */
  depositAddress: string | null;
  /** Solana Pay reference key; the sandbox also gives EVM sessions one (see {@link payerReference}). */
  reference: string | null;
  txHash: string | null;
  confirmations: number;
  requiredConfirmations: number;
  metadata: Record<string, string>;
  webhookUrl: string | null;
  successUrl: string | null;
  paymentLinkId: string | null;
  /** What is being bought, shown on the page and the receipt (purchase.ts). */
  description: string | null;
  /** Line items whose total is `amount`, or null (purchase.ts). */
  lineItems: StoredLineItem[] | null;
  /** Where the checkout page's "Cancel" takes the customer back to, or null. */
  cancelUrl: string | null;
  /** The fiat price the merchant gave instead of a token amount (issue 26), or null. */
  price: FiatPrice | null;
  /** How `price` became `amount` (rate, feeds, rounds), or null: set together with `price`. */
  priceQuote: PriceQuote | null;
  /** The pairs the session accepted when the customer chose (options.ts), or null for a single-pair session (its own pair). */
  paymentOptions: PaymentOption[] | null;
  createdAt: Date;
  updatedAt: Date;
  expiresAt: Date;
  /** End of the monitoring window: late payments count until then, and `amountDue` stays reserved. */
  monitorUntil: Date;
  detectedAt: Date | null;
  confirmedAt: Date | null;
  settledAt: Date | null;
  expiredAt: Date | null;
  failedAt: Date | null;
  failureReason: string | null;
}

/** The column (table alias `s`) each {@link Session} field is read from; money as text, parsed by {@link toSession}. */
const FIELD_SQL: Record<keyof Session, string> = {
  id: 's.id',
  merchantId: 's.merchant_id',
  livemode: 's.livemode',
  status: 's.status',
  chain: 's.chain',
  currency: 's.currency',
  decimals: 's.decimals',
  amount: 's.amount::text',
  amountDue: 's.amount_due::text',
  amountCounted: 's.amount_received::text',
  amountReceived: 's.amount_confirmed::text',
  amountPending: 'greatest(s.amount_received - s.amount_confirmed, 0)::text',
  amountReported: 's.reported_received::text',
  fee: 's.fee::text',
  tokenAddresses: 's.token_addresses',
  payTo: 's.pay_to',
  attribution: 's.attribution',
  depositAddress: 's.deposit_address',
  reference: 's.reference',
  txHash: 's.tx_hash',
  confirmations: 's.confirmations',
  requiredConfirmations: 's.required_confirmations',
  metadata: 's.metadata',
  webhookUrl: 's.webhook_url',
  successUrl: 's.success_url',
  paymentLinkId: 's.payment_link_id',
  description: 's.description',
  lineItems: 's.line_items',
  cancelUrl: 's.cancel_url',
  price: 's.price',
  priceQuote: 's.price_quote',
  paymentOptions: 's.payment_options',
  createdAt: 's.created_at',
  updatedAt: 's.updated_at',
  expiresAt: 's.expires_at',
  monitorUntil: 's.monitor_until',
  detectedAt: 's.detected_at',
  confirmedAt: 's.confirmed_at',
  settledAt: 's.settled_at',
  expiredAt: 's.expired_at',
  failedAt: 's.failed_at',
  failureReason: 's.failure_reason',
};

const MONEY_FIELDS = [
  'amount',
  'amountDue',
  'amountCounted',
  'amountReceived',
  'amountPending',
  'amountReported',
  'fee',
] as const satisfies readonly (keyof Session)[];

/**
 * The select list for `fields` of a session, as `payment_sessions s`: each column is named after
 * its field (`s.pay_to AS "payTo"`), so {@link toSession} only has to parse the money.
 */
export function sessionColumns(fields: readonly (keyof Session)[]): string {
  return fields.map((field) => `${FIELD_SQL[field]} AS "${field}"`).join(', ');
}

/** Every field of a session: the select list of every query that reads whole sessions (table alias `s`). */
export const SESSION_COLUMNS = sessionColumns(Object.keys(FIELD_SQL) as (keyof Session)[]);

/**
 * A row read with {@link sessionColumns} (or {@link SESSION_COLUMNS}) as a session: money text
 * becomes bigint. `K` names the fields the query selected.
 */
export function toSession<K extends keyof Session = keyof Session>(raw: Record<string, unknown>): Pick<Session, K> {
  const session: Record<string, unknown> = { ...raw };
  for (const field of MONEY_FIELDS) {
    if (typeof raw[field] === 'string') session[field] = BigInt(raw[field]);
  }
  return session as Pick<Session, K>;
}

/**
 * Where the payer sends the money: the session's deposit address in `address` mode, the
 * merchant's wallet otherwise.
 */
export function payerAddress(session: Pick<Session, 'payTo' | 'depositAddress'>): string {
  return session.depositAddress ?? session.payTo;
}

/**
 * The reference a payer is shown and asked to include: the Solana Pay reference, on solana
 * only. On EVM chains the sandbox keeps a reference on the session to route its simulated
 * payments exactly; payers must not be asked for it (the API and the checkout page both show
 * this).
 */
export function payerReference(session: Pick<Session, 'chain' | 'reference'>): string | null {
  return session.chain === 'solana' ? session.reference : null;
}
