import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ApiDeps } from './deps.ts';
import { authOf } from './auth.ts';
import { answerUnclaimed, claimIdempotencyKeyInTransaction, saveIdempotentResponse, type Claim } from './idempotency.ts';
import { safeUrl } from './routes/webhooks.ts';
import { createSession, type CreateSessionParams } from '../payments/sessions.ts';
import type { Session } from '../payments/session.ts';
import { liveChains } from '../internal/config.ts';
import { sessionLinks, type SessionLinks } from './views.ts';
import { formatAmount } from '../internal/money.ts';
import { quotePrice, requireAmountOrPrice, type FiatPrice, type PricingDeps } from '../pricing/index.ts';

/** What the create routes' bodies carry (their schemas differ only in which fields are optional). */
export type CreateSessionBodyFields = Omit<
  CreateSessionParams,
  'merchantId' | 'livemode' | 'monitorWindowSeconds' | 'feeBps' | 'chains' | 'paymentLinkId' | 'liveChains' | 'amount' | 'price' | 'priceQuote'
> & { amount?: string | undefined; price?: FiatPrice | undefined };

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
 * The one handler behind `POST /sessions` (Interface A), `POST /payments` and
 * `POST /checkout/sessions` (Interface B): refuse an internal `webhookUrl`, create the session
 * (a live one only on a chain an ingester watches),
 * claim the Idempotency-Key and store its answer in the same transaction, and answer 201 in the
 * interface's view. Its routes set `config.idempotency = 'in-handler'`.
 */
export function createSessionHandler<View>(deps: ApiDeps, view: (session: Session, links: SessionLinks) => View) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const auth = authOf(request);
    const body = request.body as CreateSessionBodyFields;
    requireAmountOrPrice(body);
    if (body.webhookUrl) await safeUrl(body.webhookUrl, deps, auth.livemode, 'webhookUrl');
    const outcome = await deps.store.transaction(async (sql): Promise<{ created: View } | { unclaimed: Exclude<Claim, { kind: 'claimed' }> }> => {
      // The Idempotency-Key is claimed here, not before the handler (the routes say
      // `idempotency: 'in-handler'`): claim, session and stored answer in one durable commit.
      const claim = await claimIdempotencyKeyInTransaction(sql, request);
      if (claim && claim.kind !== 'claimed') return { unclaimed: claim };
      // Converted after the claim (a replay answers the stored session without reading a feed),
      // inside the transaction, so a refusal (422) leaves nothing written.
      const priced = await amountOf(deps.pricing, body, auth.livemode);
      const row = await createSession(sql, {
        ...body,
        ...priced,
        merchantId: auth.merchantId,
        livemode: auth.livemode,
        monitorWindowSeconds: deps.config.monitorWindowSeconds,
        feeBps: deps.config.feeBps,
        liveChains: liveChains(deps.config),
      });
      const created = view(row, sessionLinks(deps));
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
