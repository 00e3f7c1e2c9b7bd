import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ApiDeps } from './deps.ts';
import { authOf } from './auth.ts';
import { answerUnclaimed, claimIdempotencyKeyInTransaction, saveIdempotentResponse, type Claim } from './idempotency.ts';
import { safeUrl } from './routes/webhooks.ts';
import { createSession, type CreateSessionParams } from '../payments/sessions.ts';
import type { Session } from '../payments/session.ts';
import { liveChains } from '../internal/config.ts';
import { badRequest } from '../internal/errors.ts';
import type { Sql } from '../store/index.ts';
import { createPendingChoice, type PendingChoice } from '../payments/choices.ts';
import type { PaymentOption } from '../payments/options.ts';
import { sessionLinks, type SessionLinks } from './views.ts';
import { formatAmount } from '../internal/money.ts';
import { quotePrice, requireAmountOrPrice, type FiatPrice, type PricingDeps } from '../pricing/index.ts';

/** What the create routes' bodies carry (their schemas differ only in which fields are optional). */
export type CreateSessionBodyFields = Omit<
  CreateSessionParams,
  | 'merchantId'
  | 'livemode'
  | 'monitorWindowSeconds'
  | 'feeBps'
  | 'chains'
  | 'paymentLinkId'
  | 'liveChains'
  | 'chosen'
  | 'chain'
  | 'currency'
  | 'amount'
  | 'price'
  | 'priceQuote'
> &
  Partial<Pick<CreateSessionParams, 'chain' | 'currency'>> & {
    paymentOptions?: PaymentOption[] | undefined;
    amount?: string | undefined;
    price?: FiatPrice | undefined;
  };

/**
 * The token amount of a creation: `amount` as given, or `price` converted now (src/pricing:
 * Chainlink feeds live, fixed rates in the sandbox) with the price and quote to record.
 */
export async function amountOf(
  pricing: PricingDeps,
  body: { amount?: string | undefined; price?: FiatPrice | undefined; chain: CreateSessionParams['chain']; currency: CreateSessionParams['currency'] },
  livemode: boolean,
): Promise<Pick<CreateSessionParams, 'amount' | 'price' | 'priceQuote'>> {
  if (!body.price) return { amount: body.amount! };
  const quoted = await quotePrice(pricing, { price: body.price, chain: body.chain, currency: body.currency, livemode });
  return { amount: formatAmount(quoted.amount, quoted.decimals), price: quoted.price, priceQuote: quoted.quote };
}

/**
 * Creates what a body asks for, on `sql`: a single-pair session for `chain` + `currency` (as
 * always) or a one-entry `paymentOptions`; otherwise a session waiting for the customer's choice
 * among `paymentOptions`, or among every pair the merchant can receive when neither is given (one
 * receivable pair only: that pair's session at once, there is nothing to choose). A fiat `price`
 * is converted for the session's pair ({@link amountOf}); with several options it is refused for
 * now (the conversion at the customer's choice is not wired yet: docs/checkout.md).
 * @throws {InvalidRequestError} 400 for `paymentOptions` with `chain`/`currency`, or one of them without the other.
 */
export async function createFromBody(
  sql: Sql,
  body: CreateSessionBodyFields,
  context: Pick<CreateSessionParams, 'merchantId' | 'livemode' | 'monitorWindowSeconds' | 'feeBps' | 'liveChains'>,
  pricing: PricingDeps,
): Promise<{ session: Session } | { pending: PendingChoice }> {
  const { paymentOptions, chain, currency, amount, price, ...rest } = body;
  if (paymentOptions !== undefined && (chain !== undefined || currency !== undefined)) {
    throw badRequest('give either chain and currency (one pair) or paymentOptions (the pairs the customer chooses from), not both');
  }
  if ((chain === undefined) !== (currency === undefined))
    throw badRequest('chain and currency go together: give both, or neither (with or without paymentOptions)');
  const single = async (pair: PaymentOption) => ({
    session: await createSession(sql, { ...rest, ...context, ...pair, ...(await amountOf(pricing, { amount, price, ...pair }, context.livemode)) }),
  });
  if (chain !== undefined && currency !== undefined) return single({ chain, currency });
  if (paymentOptions?.length === 1) return single(paymentOptions[0]!);
  if (price)
    throw badRequest(
      'a fiat price needs one chain and currency for now: give chain and currency (or one paymentOptions entry) with price, or a token amount with several options',
    );
  const pending = await createPendingChoice(sql, { ...rest, amount: amount!, ...context, paymentOptions });
  if (pending.paymentOptions.length > 1) return { pending };
  // Defaults that came to one pair: no choice to wait for. The waiting row goes (same transaction).
  await sql.query('DELETE FROM session_choices WHERE id = $1', [pending.id]);
  return single(pending.paymentOptions[0]!);
}

/**
 * The one handler behind `POST /sessions` (Interface A), `POST /payments` and
 * `POST /checkout/sessions` (Interface B): refuse an internal `webhookUrl`, create the session
 * (a live one only on a chain an ingester watches),
 * claim the Idempotency-Key and store its answer in the same transaction, and answer 201 in the
 * interface's view. Its routes set `config.idempotency = 'in-handler'`.
 */
export function createSessionHandler<View, PendingView>(
  deps: ApiDeps,
  view: (session: Session, links: SessionLinks) => View,
  pendingView: (choice: PendingChoice, links: SessionLinks) => PendingView,
) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const auth = authOf(request);
    const body = request.body as CreateSessionBodyFields;
    requireAmountOrPrice(body);
    if (body.webhookUrl) await safeUrl(body.webhookUrl, deps, auth.livemode, 'webhookUrl');
    const outcome = await deps.store.transaction(async (sql): Promise<{ created: View | PendingView } | { unclaimed: Exclude<Claim, { kind: 'claimed' }> }> => {
      // The Idempotency-Key is claimed here, not before the handler (the routes say
      // `idempotency: 'in-handler'`): claim, session and stored answer in one durable commit.
      const claim = await claimIdempotencyKeyInTransaction(sql, request);
      if (claim && claim.kind !== 'claimed') return { unclaimed: claim };
      // Priced after the claim (a replay answers the stored session without reading a feed),
      // inside the transaction, so a refusal (422) leaves nothing written.
      const made = await createFromBody(
        sql,
        body,
        {
          merchantId: auth.merchantId,
          livemode: auth.livemode,
          monitorWindowSeconds: deps.config.monitorWindowSeconds,
          feeBps: deps.config.feeBps,
          liveChains: liveChains(deps.config),
        },
        deps.pricing,
      );
      const created = 'session' in made ? view(made.session, sessionLinks(deps)) : pendingView(made.pending, sessionLinks(deps));
      await saveIdempotentResponse(sql, request, 201, created);
      return { created };
    });
    if ('unclaimed' in outcome) {
      answerUnclaimed(reply, outcome.unclaimed);
      return;
    }
    // Sent here, so the handler resolves with nothing (fastify sees the reply is already sent).
    reply.status(201).send(outcome.created);
  };
}
