import type { Sql } from '../store/index.ts';
import { newId } from '../internal/crypto.ts';
import { badRequest, conflict, GoneError, NonRetryableError, notFound } from '../internal/errors.ts';
import { requireAmountOrPrice, storedPrice, type FiatPrice } from '../pricing/index.ts';
import type { Attribution } from './attribution.ts';
import type { LineItemInput } from './purchase.ts';
import { createSession, type CreateSessionParams, type SessionMerchantBrand } from './sessions.ts';
import { toSession, type Session } from './session.ts';
import * as sessionSql from './sessionSql.ts';
import { checkPaymentOptions, optionsOf, pairName, samePair, type PaymentOption } from './options.ts';
import { AMOUNT_LIMITS } from './terms.ts';
import type { Priced } from './choicePrices.ts';

/**
 * Sessions that accept several (chain, currency) pairs and wait for the customer's choice. Such a
 * session is a `session_choices` row (migration 043) until the choice, and nothing else: no due
 * amount, no deposit address, no x402 binding, nothing the engine or the matcher reads. The choice
 * ({@link chooseOption}) makes the `payment_sessions` row under the same id, with the chosen pair,
 * in one transaction with the row that records it; from then on it is a session like any other,
 * and the choice is fixed (no re-choice: a customer who wants another token opens the link again,
 * or the merchant creates another session).
 */

/**
 * What a waiting session is made of once chosen: the creation's terms without a pair (text as it
 * came over the wire, already checked). `amount` is absent when the session is priced in a fiat
 * currency ({@link PendingChoice.price}): the chosen pair's amount is converted at the choice.
 */
export interface PendingTerms {
  amount?: string | undefined;
  expiresIn: number;
  metadata?: Record<string, string> | undefined;
  webhookUrl?: string | undefined;
  successUrl?: string | undefined;
  cancelUrl?: string | undefined;
  description?: string | undefined;
  lineItems?: LineItemInput[] | undefined;
  attribution?: Attribution | undefined;
  feeBps?: number | undefined;
  /** The payment link whose x402 URL opened it (linkChoices.ts); the chosen session belongs to that link. */
  paymentLinkId?: string | undefined;
}

/** A session waiting for its customer's choice. */
export interface PendingChoice {
  id: string;
  merchantId: string;
  livemode: boolean;
  paymentOptions: PaymentOption[];
  terms: PendingTerms;
  /** A fiat price instead of `terms.amount` (migration 045): converted for the pair chosen, at the choice. */
  price: FiatPrice | null;
  createdAt: Date;
  expiresAt: Date;
  /** Set once chosen (then the `payment_sessions` row is the session). */
  chosenAt: Date | null;
  /** The database's clock when read, so expiry is judged on one clock. */
  now: Date;
}

const CHOICE_COLUMNS = `c.id, c.merchant_id AS "merchantId", c.livemode, c.payment_options AS "paymentOptions", c.terms, c.price,
  c.created_at AS "createdAt", c.expires_at AS "expiresAt", c.chosen_at AS "chosenAt", now() AS now`;

/**
 * Creates a session that waits for the customer's choice among `paymentOptions` (or every pair the
 * merchant can receive in this mode when absent), on `sql`. Every pair's terms are checked now
 * ({@link checkPaymentOptions}); nothing is reserved. Exactly one of `amount` (token units) and
 * `price` (fiat, checked now, converted at the choice); a priced session's pairs are checked with
 * the smallest allowed amount, as a fiat-priced link's are (the amount is known at the choice).
 * @throws {InvalidRequestError} 400 for bad input; {ConflictError} 409 for a live pair on an unwatched chain.
 */
export async function createPendingChoice(
  sql: Sql,
  params: Omit<CreateSessionParams, 'chain' | 'currency' | 'chosen' | 'paymentLinkId' | 'amount' | 'price' | 'priceQuote'> & {
    amount?: string | undefined;
    price?: FiatPrice | undefined;
    paymentOptions?: PaymentOption[] | undefined;
  },
): Promise<PendingChoice> {
  requireAmountOrPrice(params);
  const price = params.price && storedPrice(params.price);
  const checked = await checkPaymentOptions(sql, { ...params, amount: params.amount ?? AMOUNT_LIMITS.min });
  const terms: PendingTerms = {
    amount: price ? undefined : params.amount,
    expiresIn: checked[0]!.terms.expiresIn,
    metadata: params.metadata,
    webhookUrl: params.webhookUrl,
    successUrl: params.successUrl,
    cancelUrl: params.cancelUrl,
    description: params.description,
    lineItems: params.lineItems,
    attribution: params.attribution,
    feeBps: params.feeBps,
  };
  const { rows } = await sql.query(
    `INSERT INTO session_choices AS c (id, merchant_id, livemode, payment_options, terms, expires_at, price)
     VALUES ($1, $2, $3, $4::jsonb, $5::jsonb, now() + make_interval(secs => $6), $7::jsonb)
     RETURNING ${CHOICE_COLUMNS}`,
    [
      newId('ses'),
      params.merchantId,
      params.livemode,
      JSON.stringify(checked.map(({ pair }) => pair)),
      JSON.stringify(terms),
      terms.expiresIn,
      price ? JSON.stringify(price) : null,
    ],
  );
  return rows[0] as PendingChoice;
}

/** A waiting (or chosen) session by id, of one merchant and mode when given; undefined when none. */
export async function getPendingChoice(sql: Sql, params: { id: string; merchantId?: string; livemode?: boolean }): Promise<PendingChoice | undefined> {
  const { rows } = await sql.query(
    `SELECT ${CHOICE_COLUMNS} FROM session_choices c
      WHERE c.id = $1 AND ($2::text IS NULL OR c.merchant_id = $2) AND ($3::boolean IS NULL OR c.livemode = $3)`,
    [params.id, params.merchantId ?? null, params.livemode ?? null],
  );
  return rows[0] as PendingChoice | undefined;
}

/** Whether a waiting session is past its expiry (on the database's clock). */
export function choiceExpired(choice: Pick<PendingChoice, 'expiresAt' | 'now'>): boolean {
  return choice.now.getTime() >= choice.expiresAt.getTime();
}

/** What a choice needs from the daemon's config. */
export interface ChoiceConfig {
  monitorWindowSeconds: number;
  feeBps: number;
  liveChains: CreateSessionParams['liveChains'];
}

/**
 * Fixes the customer's choice of `pair` for session `id`, on `sql` (a transaction: the x402
 * settlement calls it in its own, with the binding). Idempotent: the pair already chosen answers
 * the session again. Refused, changing nothing: an unknown session (404), a pair that is not
 * among its options (400; a single-pair session's options are its own pair), another pair than
 * the one chosen (409), an expired session (410). Two concurrent choices are serialised by the
 * lock on the waiting row: one wins, the other then sees it (same pair: its session; another: 409).
 * The pair's terms are checked again (a wallet removed since creation is a 400 now, not a
 * session that cannot be paid).
 *
 * A session priced in a fiat currency needs `priced`: the chosen pair's token amount with the
 * price and quote that made it ({@link amountOf} for the pair, or the x402 settlement's own quote),
 * recorded on the session as a single-pair fiat session's are; without it, or for another price,
 * this throws (a bug, never a session without an amount). Quote before the transaction (a refused
 * feed then changes nothing: {@link pendingPriceOf} says whether one is needed). A token-amount
 * session ignores `priced` unless it carries a price (a mismatch: throws).
 * @returns the session, and whether this call made the choice.
 */
export async function chooseOption(
  sql: Sql,
  params: { id: string; pair: PaymentOption; config: ChoiceConfig; priced?: Pick<CreateSessionParams, 'amount' | 'price' | 'priceQuote'> },
): Promise<{ session: Session; chosen: boolean }> {
  const { rows } = await sql.query(`SELECT ${CHOICE_COLUMNS}, c.chain, c.currency FROM session_choices c WHERE c.id = $1 FOR UPDATE`, [params.id]);
  const choice = rows[0] as (PendingChoice & { chain: string | null; currency: string | null }) | undefined;
  if (!choice) {
    // A single-pair session: its one pair is its only option.
    const session = await readSession(sql, params.id);
    if (!session) throw notFound(`no checkout session ${params.id}`);
    const options = optionsOf(session);
    if (!options.some((option) => samePair(option, params.pair))) throw badRequest(`${pairName(params.pair)} is not among this session's payment options`);
    return { session, chosen: false };
  }
  if (!choice.paymentOptions.some((option) => samePair(option, params.pair))) {
    throw badRequest(`${pairName(params.pair)} is not among this session's payment options (${choice.paymentOptions.map(pairName).join(', ')})`);
  }
  if (choice.chosenAt) {
    if (choice.chain !== params.pair.chain || choice.currency !== params.pair.currency) {
      throw conflict(
        `this session's customer already chose ${choice.currency} on ${choice.chain}; a choice is final (open the payment link again, or ask the merchant for a new session)`,
      );
    }
    return { session: (await readSession(sql, params.id))!, chosen: false };
  }
  if (choiceExpired(choice)) throw new GoneError('this checkout session has expired');
  const secondsLeft = Math.max(1, (choice.expiresAt.getTime() - choice.now.getTime()) / 1000);
  const session = await createSession(sql, {
    ...choice.terms,
    ...amountAtChoice(choice, params.priced),
    chain: params.pair.chain,
    currency: params.pair.currency,
    merchantId: choice.merchantId,
    livemode: choice.livemode,
    monitorWindowSeconds: params.config.monitorWindowSeconds,
    feeBps: choice.terms.feeBps ?? params.config.feeBps,
    liveChains: params.config.liveChains,
    chosen: { id: choice.id, paymentOptions: choice.paymentOptions, secondsLeft },
  });
  await sql.query('UPDATE session_choices SET chosen_at = now(), chain = $2, currency = $3 WHERE id = $1', [
    choice.id,
    params.pair.chain,
    params.pair.currency,
  ]);
  return { session, chosen: true };
}

/** The chosen session's amount: the terms' token amount, or the price converted by the caller (checked to be this session's). */
function amountAtChoice(choice: Pick<PendingChoice, 'id' | 'terms' | 'price'>, priced: Priced | undefined): Priced {
  if (!choice.price) {
    if (priced?.price) throw new NonRetryableError(`session ${choice.id} has a token amount, not a price: it cannot be fixed from a quote`);
    return { amount: choice.terms.amount! };
  }
  if (!priced?.price || !priced.priceQuote || !priced.amount) {
    throw new NonRetryableError(`session ${choice.id} is priced in ${choice.price.currency}: choosing its pair needs the converted amount and quote (priced)`);
  }
  if (priced.price.amount !== choice.price.amount || priced.price.currency !== choice.price.currency) {
    throw new NonRetryableError(
      `session ${choice.id} is priced ${choice.price.amount} ${choice.price.currency}, not ${priced.price.amount} ${priced.price.currency}`,
    );
  }
  return { amount: priced.amount, price: choice.price, priceQuote: priced.priceQuote };
}

/**
 * The fiat price to convert before fixing `pair` on waiting session `id` (unlocked read), or
 * undefined when none is needed: no waiting session (a single-pair session, an unknown id), a token
 * amount, already chosen, expired, or a pair not among the options (chooseOption answers each).
 * So a caller quotes only what a choice will use, and a bad pair is a 400, not a feed's 422.
 */
export async function pendingPriceOf(sql: Sql, id: string, pair: PaymentOption): Promise<{ price: FiatPrice; livemode: boolean } | undefined> {
  const choice = await getPendingChoice(sql, { id });
  if (!choice?.price || choice.chosenAt || choiceExpired(choice)) return undefined;
  if (!choice.paymentOptions.some((option) => samePair(option, pair))) return undefined;
  return { price: choice.price, livemode: choice.livemode };
}

/** A whole session by id, or undefined. */
async function readSession(sql: Sql, id: string): Promise<Session | undefined> {
  const { rows } = await sql.query(sessionSql.selectSessionById(), [id]);
  return rows[0] && toSession(rows[0]);
}

/** A waiting session with its merchant's name and brand, for the payer's page (the id is the capability). */
export async function getPendingChoiceWithMerchant(
  sql: Sql,
  id: string,
): Promise<(PendingChoice & { merchantName: string; merchantBrand: SessionMerchantBrand }) | undefined> {
  const { rows } = await sql.query(
    `SELECT ${CHOICE_COLUMNS}, m.name AS "merchantName", m.accent_color AS "accentColor", m.support_email AS "supportEmail",
            m.support_url AS "supportUrl", lg.sha256 AS "logoSha256"
       FROM session_choices c JOIN merchants m ON m.id = c.merchant_id LEFT JOIN merchant_logos lg ON lg.merchant_id = m.id
      WHERE c.id = $1 AND c.chosen_at IS NULL`,
    [id],
  );
  if (!rows[0]) return undefined;
  const { accentColor, supportEmail, supportUrl, logoSha256, ...choice } = rows[0];
  return { ...(choice as PendingChoice & { merchantName: string }), merchantBrand: { accentColor, supportEmail, supportUrl, logoSha256 } };
}
