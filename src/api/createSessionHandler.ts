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
import { requireAmountOrPrice, type FiatPrice, type PricingDeps } from '../pricing/index.ts';
import { amountOf } from '../payments/choicePrices.ts';

// Where the link visit and other callers have always imported it from.
export { amountOf };

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
 * Creates what a body asks for, on `sql`: a single-pair session for `chain` + `currency` (as
 * always) or a one-entry `paymentOptions`; otherwise a session waiting for the customer's choice
 * among `paymentOptions`, or among every pair the merchant can receive when neither is given (one
 * receivable pair only: that pair's session at once, there is nothing to choose). A fiat `price`
 * is converted for the session's pair ({@link amountOf}); with several options the waiting session
 * keeps the price and the chosen pair's amount is converted at the choice (choices.ts).
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
  const pending = await createPendingChoice(sql, { ...rest, amount, price, ...context, paymentOptions });
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
