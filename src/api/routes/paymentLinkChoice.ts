import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { ApiDeps } from '../deps.ts';
import { getMerchantBrand } from '../../accounts/brand.ts';
import { badRequest, GoneError, notFound } from '../../internal/errors.ts';
import { formatAmount } from '../../internal/money.ts';
import { getPaymentLinkById } from '../../payments/links.ts';
import type { PaymentOption } from '../../payments/options.ts';
import { lineItemsView } from '../../payments/purchase.ts';
import { optionCosts } from '../../payments/choicePrices.ts';
import { choiceOptions, chooserStyles, PaymentChoiceSchema, parseChoiceBody, renderChooserPage, type ChooserView } from '../../checkout/chooser.ts';
import { pageCsp } from '../../checkout/page.ts';
import { prefersJson } from '../../checkout/index.ts';
import { errorResponses } from '../schemas.ts';

/**
 * A payment link with several payment options (issue 26): a visit shows the customer the chooser
 * and creates nothing; the session is made when the customer chooses (`POST /pay/{id}/choice`),
 * under the link's caps like any visit (links.ts). So a visit that never chose or paid leaves no
 * session behind (issue 27).
 */

/** A link's chooser for clients preferring JSON. */
export const LinkChoiceSchema = Type.Object(
  {
    object: Type.Literal('payment_link_choice'),
    id: Type.String(),
    livemode: Type.Boolean(),
    options: PaymentChoiceSchema.properties.options,
    chooseUrl: Type.String({
      format: 'uri',
      description: 'POST `{ "chain", "currency" }` here: the session is created and the answer redirects (303) to its checkout page.',
    }),
  },
  { additionalProperties: false, description: 'A payment link whose customer chooses the chain and token: its options, with what each costs.' },
);

/** The chooser of a link with several options, or undefined for a single-pair link (the caller makes its session at once). */
export async function answerLinkChooser(deps: ApiDeps, request: FastifyRequest, reply: FastifyReply, linkId: string): Promise<FastifyReply | undefined> {
  const link = await getPaymentLinkById(deps.store, linkId);
  if (!link?.paymentOptions || link.paymentOptions.length < 2) return undefined;
  if (!link.active) throw new GoneError('this payment link is no longer active');
  const brand = await getMerchantBrand(deps.store, link.merchantId);
  if (!brand) throw notFound(`payment link ${linkId} not found`);
  const view: ChooserView = {
    paymentOptions: link.paymentOptions,
    // A fiat-priced link has no amount: each option shows the price and an indicative amount.
    price: link.price,
    terms: {
      amount: link.amount === null ? undefined : formatAmount(link.amount, link.decimals),
      expiresIn: link.expiresIn,
      description: link.description ?? undefined,
      cancelUrl: link.cancelUrl ?? undefined,
      lineItems: lineItemsView(link.lineItems, link.decimals) ?? undefined,
    },
    livemode: link.livemode,
    merchantName: brand.name,
    merchantBrand: brand,
    expired: false,
  };
  reply.header('cache-control', 'no-store');
  const costs = link.price ? await optionCosts(deps.pricing, { price: link.price }, link.paymentOptions, link.livemode) : undefined;
  const chooseUrl = `${deps.config.publicUrl}/pay/${encodeURIComponent(link.id)}/choice`;
  if (prefersJson(request.headers.accept)) {
    return reply.send({ object: 'payment_link_choice', id: link.id, livemode: link.livemode, options: choiceOptions(view, [], costs), chooseUrl });
  }
  reply.header('content-security-policy', pageCsp(deps.config.checkoutFrameAncestors ?? [], chooserStyles(view)));
  reply.header('x-content-type-options', 'nosniff');
  if ((deps.config.checkoutFrameAncestors ?? []).length === 0) reply.header('x-frame-options', 'DENY');
  return reply
    .type('text/html; charset=utf-8')
    .send(renderChooserPage(view, { action: `/pay/${encodeURIComponent(link.id)}/choice`, ...(costs ? { costs } : {}) }));
}

/**
 * `POST /pay/{linkId}/choice`: the customer chose a pair on a link's chooser; `visit` makes the
 * session (with the pair) and answers 303 to its checkout page, as a plain visit does.
 */
export function paymentLinkChoiceRoute(
  app: FastifyInstance,
  deps: ApiDeps,
  visit: (linkId: string, reply: FastifyReply, pair: PaymentOption, request: FastifyRequest) => Promise<FastifyReply>,
): void {
  app.register(async (scoped) => {
    scoped.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 1024 }, (_request, body, done) => {
      done(null, Object.fromEntries(new URLSearchParams(body as string)));
    });
    scoped.post<{ Params: { linkId: string }; Body: unknown }>(
      '/pay/:linkId/choice',
      {
        config: { auth: 'none', rateLimit: 'create' },
        schema: {
          tags: ['Payment links (public)'],
          summary: "A payment link's customer chooses the chain and token",
          description:
            'For a link with several `paymentOptions`: `{ "chain", "currency" }` as JSON, or the chooser form (`option=base:USDC`). Creates the session with that pair (the caps of a visit apply) and redirects (303) to its checkout page. A pair not among the options is a 400.',
          params: Type.Object({ linkId: Type.String({ minLength: 1, 'x-not-found': 'payment link' }) }, { additionalProperties: false }),
          response: { 303: Type.Null({ description: "Redirect to the new session's checkoutUrl." }), ...errorResponses(400, 404, 409, 410, 429) },
        },
      },
      async (request, reply) => {
        const pair = parseChoiceBody(request.body);
        if (!pair) throw badRequest('give the chosen pair as {"chain": …, "currency": …} (e.g. {"chain": "base", "currency": "USDC"})');
        return visit(request.params.linkId, reply, pair, request);
      },
    );
  });
}
