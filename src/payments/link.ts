import type { ChainName } from '../internal/config.ts';
import type { Currency } from '../internal/chains.ts';
import type { Attribution } from './attribution.ts';
import type { StoredLineItem } from './purchase.ts';
import type { FiatPrice } from '../pricing/types.ts';
import type { PaymentOption } from './options.ts';

/**
 * The payment link model: one type, one column list, one mapper. A payment link is a reusable
 * price: each visit makes a fresh payment session from it. Its SQL is in linkSql.ts, its
 * operations in links.ts.
 */

/** A payment link as stored; money in base units. */
export interface PaymentLink {
  id: string;
  merchantId: string;
  livemode: boolean;
  chain: ChainName;
  currency: Currency;
  decimals: number;
  /** The token amount of each session, or null when the link is priced in a fiat currency (`price`). */
  amount: bigint | null;
  /** The fiat price each visit's session converts into the token at that visit (issue 26), or null. */
  price: FiatPrice | null;
  /** The fixed receiving wallet, or null for the merchant's default wallet on the chain at each visit. */
  merchantWallet: string | null;
  metadata: Record<string, string>;
  webhookUrl: string | null;
  successUrl: string | null;
  /** What each session is for (copied into it): see purchase.ts. */
  description: string | null;
  lineItems: StoredLineItem[] | null;
  cancelUrl: string | null;
  /** Lifetime in seconds of each session the link makes. */
  expiresIn: number;
  /** The mode of each session the link makes, or null for the merchant's default at each visit. */
  attribution: Attribution | null;
  /** The pairs the customer chooses from (options.ts), or null: only `chain`/`currency`. With several, `chain`/`currency`/`decimals` hold the first. */
  paymentOptions: PaymentOption[] | null;
  /** False once deactivated (links are deactivated, never deleted). */
  active: boolean;
  /** Opted in to x402 discovery (`GET /discovery/resources`, docs/agents.md "Discovery"); false by default. */
  x402Discoverable: boolean;
  /** How many sessions visits have made. */
  sessionsCreated: number;
  createdAt: Date;
  updatedAt: Date;
}

/** The column (table alias `l`) each {@link PaymentLink} field is read from. */
const FIELD_SQL: Record<keyof PaymentLink, string> = {
  id: 'l.id',
  merchantId: 'l.merchant_id',
  livemode: 'l.livemode',
  chain: 'l.chain',
  currency: 'l.currency',
  decimals: 'l.decimals',
  amount: 'l.amount::text',
  price: 'l.price',
  merchantWallet: 'l.merchant_wallet',
  metadata: 'l.metadata',
  webhookUrl: 'l.webhook_url',
  successUrl: 'l.success_url',
  description: 'l.description',
  lineItems: 'l.line_items',
  cancelUrl: 'l.cancel_url',
  expiresIn: 'l.expires_in',
  attribution: 'l.attribution',
  paymentOptions: 'l.payment_options',
  active: 'l.active',
  x402Discoverable: 'l.x402_discoverable',
  sessionsCreated: 'l.sessions_created',
  createdAt: 'l.created_at',
  updatedAt: 'l.updated_at',
};

/** The select list of every payment-link query (`payment_links l`), each column named after its field. */
export const LINK_COLUMNS = Object.entries(FIELD_SQL)
  .map(([field, column]) => `${column} AS "${field}"`)
  .join(', ');

/** A row read with {@link LINK_COLUMNS} as a payment link (amount text becomes bigint). */
export const toPaymentLink = (raw: Record<string, unknown>): PaymentLink => ({
  ...(raw as unknown as PaymentLink),
  amount: raw.amount === null || raw.amount === undefined ? null : BigInt(raw.amount as string),
});
