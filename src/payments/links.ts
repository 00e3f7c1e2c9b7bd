import type { Sql, Store } from '../store/index.ts';
import type { ChainName } from '../internal/config.ts';
import { formatAmount } from '../internal/money.ts';
import { badRequest, GoneError, notFound, RateLimitedError } from '../internal/errors.ts';
import { newId } from '../internal/crypto.ts';
import type { Session } from './session.ts';
import { AMOUNT_LIMITS, checkSessionTerms, type CheckedTerms, type SessionTerms } from './terms.ts';
import { dueOffsetBound, lockDueAmounts } from './dueAmounts.ts';
import { createSession, type CreateSessionParams } from './sessions.ts';
import { toPaymentLink, type PaymentLink } from './link.ts';
import * as linkSql from './linkSql.ts';
import { checkPurchase, lineItemsView, type PurchaseInput } from './purchase.ts';
import type { FiatPrice } from '../pricing/types.ts';
import { requireAmountOrPrice, storedPrice } from '../pricing/fiat.ts';
import { amountForChoice, checkPaymentOptions, optionsOf, pairName, samePair, type PaymentOption } from './options.ts';

/**
 * The payment link operations: create, read, list, (de)activate, and a visit, which makes a
 * fresh session from the link. Visits are public and anonymous, so they are capped per link and
 * per price (see the two limits below).
 */

/**
 * Unpaid, unexpired sessions one payment link may have open at once. 200 concurrent checkouts of
 * one link is a busy shop; a flood of visits waits for some to expire instead of piling up.
 */
export const MAX_OPEN_SESSIONS_PER_LINK = 200;

/**
 * Due amounts that unpaid link sessions may hold at one price on one wallet (chain, currency,
 * receiving address, amount), over every link and the whole monitoring window: a session keeps
 * its due amount reserved until `monitor_until` (expiry plus the late-payment window, 24 h by
 * default), long after it stops counting as open. A 6-decimal token has 10,000 due amounts per
 * price (see dueOffsetBound); this leaves nine tenths of them to the merchant's own sessions
 * whatever anonymous visitors do.
 */
export const MAX_LINK_RESERVATIONS_PER_PRICE = 1_000;

/** What a merchant asks of a new link: a session's terms, and what each session carries. */
export interface CreateLinkParams
  extends Omit<SessionTerms, 'amount' | 'chain' | 'currency'>,
    Partial<Pick<SessionTerms, 'chain' | 'currency'>>,
    PurchaseInput {
  /** Token amount of each session; or `price`, a fiat price converted at each visit (exactly one). */
  amount?: string | undefined;
  price?: FiatPrice | undefined;
  /** The pairs each visit's customer chooses from; neither this nor `chain`: every pair the merchant can receive (options.ts). */
  paymentOptions?: PaymentOption[] | undefined;
  // `attribution` (from SessionTerms): fixed on the link when given; absent, each visit takes the merchant's default.
  metadata?: Record<string, string> | undefined;
  webhookUrl?: string | undefined;
  successUrl?: string | undefined;
  /** Listed by x402 discovery (docs/agents.md "Discovery"); false when absent. */
  x402Discoverable?: boolean | undefined;
}

/**
 * Creates a payment link, on `sql`. Its terms get the checks a visit's session will get, now
 * ({@link checkSessionTerms}): a link that no visit could pay is a 4xx here.
 */
export async function createPaymentLink(sql: Sql, params: CreateLinkParams): Promise<PaymentLink> {
  requireAmountOrPrice(params);
  const price = params.price && storedPrice(params.price);
  const { chain, currency, paymentOptions: requested } = params;
  if (requested !== undefined && (chain !== undefined || currency !== undefined)) {
    throw badRequest('give either chain and currency (one pair) or paymentOptions (the pairs the customer chooses from), not both');
  }
  if ((chain === undefined) !== (currency === undefined))
    throw badRequest('chain and currency go together: give both, or neither (with or without paymentOptions)');
  // A fiat-priced link's terms are checked now with a placeholder amount (the smallest allowed):
  // its token amount is only known at each visit, when the session's terms are checked in full.
  const checkable = { ...params, amount: params.amount ?? AMOUNT_LIMITS.min };
  // Several pairs: each checked now; the link's own columns hold the first, and each visit's customer chooses.
  const options =
    chain && currency
      ? [{ pair: { chain, currency }, terms: await checkSessionTerms(sql, { ...checkable, chain, currency }) }]
      : await checkPaymentOptions(sql, checkable);
  const { pair, terms } = options[0]!;
  const purchase = checkPurchase(params, { amount: terms.amount, decimals: terms.decimals, currency: pair.currency });
  const { rows } = await sql.query(linkSql.insertLink(), [
    newId('plink'),
    params.merchantId,
    params.livemode,
    pair.chain,
    pair.currency,
    terms.decimals,
    terms.amount.toString(),
    terms.merchantWallet ?? null,
    params.metadata ?? {},
    params.webhookUrl ?? null,
    params.successUrl ?? null,
    terms.expiresIn,
    // Only a mode asked for is fixed; none follows the merchant's default at each visit.
    params.attribution ?? null,
    purchase.description,
    purchase.lineItems && JSON.stringify(purchase.lineItems),
    purchase.cancelUrl,
    options.length > 1 ? JSON.stringify(options.map((option) => option.pair)) : null,
    params.x402Discoverable ?? false,
  ]);
  if (!price) return toPaymentLink(rows[0]!);
  const { rows: priced } = await sql.query(linkSql.setLinkPrice(), [rows[0]!.id, JSON.stringify(price)]);
  return toPaymentLink(priced[0]!);
}

/** One link of a merchant and mode, or undefined. */
export async function getPaymentLink(sql: Sql, params: { merchantId: string; livemode: boolean; id: string }): Promise<PaymentLink | undefined> {
  const { rows } = await sql.query(linkSql.selectLink(), [params.id, params.merchantId, params.livemode]);
  return rows[0] && toPaymentLink(rows[0]);
}

/** One link by its public id alone (a visit), or undefined. */
export async function getPaymentLinkById(sql: Sql, id: string): Promise<PaymentLink | undefined> {
  const { rows } = await sql.query(linkSql.selectLinkById(), [id]);
  return rows[0] && toPaymentLink(rows[0]);
}

/** A page of a merchant's links, newest first, optionally only (in)active ones. */
export async function listPaymentLinks(
  sql: Sql,
  params: { merchantId: string; livemode: boolean; active?: boolean | undefined; startingAfter?: string | undefined; limit: number },
): Promise<PaymentLink[]> {
  const { rows } = await sql.query(linkSql.listLinks(), [
    params.merchantId,
    params.livemode,
    params.active ?? null,
    params.startingAfter ?? null,
    params.limit,
  ]);
  return rows.map(toPaymentLink);
}

/** Deactivates (`active: false`) or reactivates a link; undefined when the merchant has no such link. */
export async function setPaymentLinkActive(
  sql: Sql,
  params: { merchantId: string; livemode: boolean; id: string; active: boolean },
): Promise<PaymentLink | undefined> {
  const { rows } = await sql.query(linkSql.setLinkActive(), [params.id, params.merchantId, params.livemode, params.active]);
  return rows[0] && toPaymentLink(rows[0]);
}

/** Opts a link in to x402 discovery or out of it; undefined when the merchant has no such link. */
export async function setPaymentLinkDiscoverable(
  sql: Sql,
  params: { merchantId: string; livemode: boolean; id: string; discoverable: boolean },
): Promise<PaymentLink | undefined> {
  const { rows } = await sql.query(linkSql.setLinkDiscoverable(), [params.id, params.merchantId, params.livemode, params.discoverable]);
  return rows[0] && toPaymentLink(rows[0]);
}

/** A listed link as x402 discovery reads it: the link, where its money goes, and its merchant. */
export interface DiscoverableLink {
  link: PaymentLink;
  payTo: string;
  /** The merchant's default wallet per chain (a link with several options is paid on each chain to that chain's). */
  wallets: Partial<Record<ChainName, string>>;
  merchantName: string;
  acceptBridged: boolean;
}

/**
 * A page of the links x402 discovery lists ({@link linkSql.listDiscoverableLinks}: opted in,
 * active, live, on a `chain:currency` of `pairs`), newest first, and how many match in all.
 */
export async function listDiscoverableLinks(
  sql: Sql,
  params: { pairs: string[]; payTo?: string | undefined; limit: number; offset: number },
): Promise<{ links: DiscoverableLink[]; total: number }> {
  if (params.pairs.length === 0) return { links: [], total: 0 };
  const { rows } = await sql.query(linkSql.listDiscoverableLinks(), [params.pairs, params.payTo ?? null, params.limit, params.offset]);
  const links = rows.map((row) => {
    const { payTo, wallets, merchantName, acceptBridged, total: _total, ...link } = row as Record<string, unknown>;
    return {
      link: toPaymentLink(link),
      payTo: payTo as string,
      wallets: wallets as DiscoverableLink['wallets'],
      merchantName: merchantName as string,
      acceptBridged: acceptBridged as boolean,
    };
  });
  // An offset past the end returns no row to carry the count: count again without it.
  const total = rows[0] ? (rows[0].total as number) : params.offset > 0 ? (await listDiscoverableLinks(sql, { ...params, limit: 1, offset: 0 })).total : 0;
  return { links, total };
}

/**
 * A visit to a link: makes a fresh session from it, in one transaction. 404 for an unknown link,
 * 410 for an inactive one, 429 (with `Retry-After`) while the link has
 * {@link MAX_OPEN_SESSIONS_PER_LINK} unpaid checkouts open or its price and wallet hold
 * {@link MAX_LINK_RESERVATIONS_PER_PRICE} due amounts; otherwise what session creation refuses.
 */
export async function openSessionFromLink(
  store: Store,
  params: {
    linkId: string;
    monitorWindowSeconds: number;
    feeBps: number;
    liveChains: readonly ChainName[];
    /** The customer's choice among the link's options (required when it has several). */
    pair?: PaymentOption | undefined;
    /**
     * Converts a fiat-priced link's price for this visit's pair (the link's, or the customer's
     * choice; the API passes src/pricing's quote): the session's amount, price and quote. Without
     * it such a link cannot be visited.
     */
    quote?: ((link: PaymentLink, pair: PaymentOption) => Promise<Pick<CreateSessionParams, 'amount' | 'price' | 'priceQuote'>>) | undefined;
  },
): Promise<Session> {
  return store.transaction(async (sql) => {
    const { rows } = await sql.query(linkSql.lockLinkById(), [params.linkId]);
    const link = rows[0] && toPaymentLink(rows[0]);
    if (!link) throw notFound(`payment link ${params.linkId} not found`);
    if (!link.active) throw new GoneError('this payment link is no longer active');
    const { rows: open } = await sql.query<{ n: number; seconds: number | null }>(linkSql.countOpenLinkSessions(), [link.id]);
    if (open[0]!.n >= MAX_OPEN_SESSIONS_PER_LINK) {
      // Retry-After: when the first of them expires (a slot frees then), at most a minute, so a
      // paid one (which frees its slot at once) is not waited for longer than that.
      throw new RateLimitedError('too many checkouts of this payment link are open and unpaid; try again in a few minutes', {
        retryAfterSeconds: Math.min(60, Math.max(1, open[0]!.seconds ?? 60)),
      });
    }
    // A link with several pairs makes a session only once its customer chose one (never on a mere visit).
    const options = optionsOf(link);
    const pair = params.pair ?? (options.length === 1 ? options[0]! : undefined);
    if (!pair) throw badRequest('this payment link lets the customer choose the chain and token: choose one of its paymentOptions');
    if (!options.some((option) => samePair(option, pair))) throw badRequest(`${pairName(pair)} is not among this payment link's options`);
    // A fiat-priced link's amount is decided now, for this visit's session and the chosen pair (issue 26).
    let priced: Pick<CreateSessionParams, 'amount' | 'price' | 'priceQuote'>;
    if (link.amount !== null) priced = { amount: amountForChoice({ amount: formatAmount(link.amount, link.decimals) }, pair) };
    else if (params.quote) priced = await params.quote(link, pair);
    else throw badRequest('this payment link is priced in a fiat currency, which this gateway cannot convert here');
    const session: CreateSessionParams = {
      ...priced,
      currency: pair.currency,
      chain: pair.chain,
      merchantWallet: link.merchantWallet ?? undefined,
      ...linkSessionTerms(link),
      paymentLinkId: link.id,
      monitorWindowSeconds: params.monitorWindowSeconds,
      feeBps: params.feeBps,
      liveChains: params.liveChains,
      chosen: link.paymentOptions ? { paymentOptions: link.paymentOptions } : undefined,
    };
    // `address` mode reserves no due amount (each session has its own address): only the
    // per-link bound on open sessions above applies.
    const terms = await checkSessionTerms(sql, session);
    if (terms.attribution === 'amount') await checkLinkReservations(sql, session, terms);
    const created = await createSession(sql, session);
    await sql.query(linkSql.countLinkSession(), [link.id]);
    return created;
  });
}

/**
 * Refuses (429) a visit while unpaid link sessions hold {@link MAX_LINK_RESERVATIONS_PER_PRICE}
 * due amounts at the price and wallet the visit's session would take one from. Counted under the
 * due-amount locks that createSession takes next in the same transaction (they are re-entrant),
 * so concurrent visits of any link at that price cannot pass the cap together. `Retry-After`
 * says when the first of those reservations ends.
 */
async function checkLinkReservations(sql: Sql, params: CreateSessionParams, terms: Pick<CheckedTerms, 'amount' | 'decimals' | 'payTo'>): Promise<void> {
  const { amount, decimals, payTo } = terms;
  const tuple = { chain: params.chain, currency: params.currency, payTo, amount, decimals };
  await lockDueAmounts(sql, tuple);
  const { rows } = await sql.query<{ n: number; seconds: number | null }>(linkSql.countLinkReservations(), [
    params.chain,
    params.currency,
    payTo,
    amount.toString(),
    dueOffsetBound(decimals).toString(),
    MAX_LINK_RESERVATIONS_PER_PRICE,
  ]);
  if (rows[0]!.n >= MAX_LINK_RESERVATIONS_PER_PRICE) {
    throw new RateLimitedError(
      `unpaid checkouts from payment links hold ${MAX_LINK_RESERVATIONS_PER_PRICE} due amounts at this price and wallet until their late-payment windows end; try again later (Retry-After) or use another link amount`,
      { retryAfterSeconds: Math.max(1, rows[0]!.seconds ?? 60) },
    );
  }
}

/**
 * What every session a link opens takes from it, whether made at a visit ({@link openSessionFromLink})
 * or waiting for the customer's choice (linkChoices.ts): its merchant, mode, purchase and URLs.
 */
export function linkSessionTerms(link: PaymentLink) {
  return {
    merchantId: link.merchantId,
    livemode: link.livemode,
    metadata: link.metadata,
    webhookUrl: link.webhookUrl ?? undefined,
    successUrl: link.successUrl ?? undefined,
    description: link.description ?? undefined,
    lineItems: lineItemsView(link.lineItems, link.decimals) ?? undefined,
    cancelUrl: link.cancelUrl ?? undefined,
    expiresIn: link.expiresIn,
    attribution: link.attribution ?? undefined,
  };
}
