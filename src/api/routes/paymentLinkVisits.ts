import type { FastifyInstance, FastifyReply } from 'fastify';
import { Type } from 'typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ApiDeps } from '../deps.ts';
import { openSessionFromLink } from '../../payments/links.ts';
import { liveChains } from '../../internal/config.ts';
import { refusalAnswer } from '../httpErrors.ts';
import { errorResponses } from '../schemas.ts';
import { checkoutUrl } from '../views.ts';
import { amountOf } from '../createSessionHandler.ts';
import { sendMessagePage, wantsPage } from '../../checkout/index.ts';
import type { PaymentOption } from '../../payments/options.ts';
import { answerLinkChooser, LinkChoiceSchema, paymentLinkChoiceRoute } from './paymentLinkChoice.ts';

/**
 * `GET /pay/:linkId` at the root of the public URL, no authentication: creates a fresh session
 * from the link and answers 303 to its checkout page. An inactive link is 410, an unknown one
 * 404, a link whose visitors hold too many due amounts 429. Limited per IP with the
 * payment-creation budget (10 per minute).
 */
export function publicPaymentLinkRoutes(app: FastifyInstance, deps: ApiDeps): void {
  app.withTypeProvider<TypeBoxTypeProvider>().get(
    '/pay/:linkId',
    {
      config: { auth: 'none', rateLimit: 'create' },
      schema: {
        tags: ['Payment links (public)'],
        summary: 'Visit a payment link',
        description:
          'Creates a fresh payment session from the link and redirects (303) to its checkout page. A link with several `paymentOptions` answers the chooser instead (200: a page, or JSON `payment_link_choice` for clients preferring JSON) and creates nothing until the customer chooses (POST /pay/{linkId}/choice). 429 with `Retry-After` while the link has 200 unpaid checkouts open, or while unpaid link checkouts still hold 1,000 due amounts at its price and wallet (each holds one until its late-payment window ends).',
        // Any string: a link pasted with a stray character still reaches the handler, whose 404
        // is a page for the customer's browser.
        params: Type.Object(
          { linkId: Type.String({ minLength: 1, description: 'Payment link identifier (`plink_…`).', 'x-not-found': 'payment link' }) },
          { additionalProperties: false },
        ),
        response: {
          200: {
            description: 'A link with several payment options: the chooser.',
            content: { 'text/html': { schema: { type: 'string' } }, 'application/json': { schema: LinkChoiceSchema } },
          },
          303: Type.Null({ description: "Redirect to the new session's checkoutUrl (Location header)." }),
          ...errorResponses(400, 404, 409, 410, 422, 429),
        },
      },
    },
    async (request, reply) => {
      try {
        return (await answerLinkChooser(deps, request, reply, request.params.linkId!)) ?? (await visit(request.params.linkId!, reply));
      } catch (error) {
        // The link is opened by customers in a browser: they get a page that says what happened,
        // not the API's JSON (which API clients, and anything not naming text/html, still get).
        const answer = refusalAnswer(error);
        if (!answer || !wantsPage(request.headers.accept)) throw error;
        reply.headers(answer.headers);
        return sendMessagePage(reply, { status: answer.status, ...customerMessage(answer.status), https: deps.config.publicUrl.startsWith('https:') });
      }
    },
  );

  paymentLinkChoiceRoute(app, deps, async (linkId, reply, pair, request) => {
    try {
      return await visit(linkId, reply, pair);
    } catch (error) {
      const answer = refusalAnswer(error);
      if (!answer || !request.headers['content-type']?.startsWith('application/x-www-form-urlencoded')) throw error;
      reply.headers(answer.headers);
      return sendMessagePage(reply, { status: answer.status, ...customerMessage(answer.status), https: deps.config.publicUrl.startsWith('https:') });
    }
  });

  async function visit(linkId: string, reply: FastifyReply, pair?: PaymentOption) {
    const session = await openSessionFromLink(deps.store, {
      pair,
      linkId,
      monitorWindowSeconds: deps.config.monitorWindowSeconds,
      feeBps: deps.config.feeBps,
      liveChains: liveChains(deps.config),
      quote: (link, chosen) => amountOf(deps.pricing, { price: link.price!, ...chosen }, link.livemode),
    });
    return reply.header('cache-control', 'no-store').redirect(checkoutUrl(deps.config.publicUrl, session.id), 303);
  }
}

/** What a customer reads when a payment link cannot start a checkout (no operator or merchant details). */
function customerMessage(status: number): { title: string; text: string } {
  switch (status) {
    case 404:
      return { title: 'Payment link not found', text: 'This payment link is not valid. Check the link you were given, or return to the merchant.' };
    case 410:
      return { title: 'Payment link no longer active', text: 'The merchant has turned this payment link off. Return to the merchant for a new one.' };
    case 422:
      return {
        title: 'Price not available right now',
        text: 'The price of this payment link cannot be converted right now. Please try again in a few minutes.',
      };
    case 429:
      return { title: 'Too many checkouts open', text: 'Many checkouts of this link are open right now. Please try again later.' };
    default:
      return { title: 'Payment link unavailable', text: 'This payment link cannot take payments right now. Please contact the merchant.' };
  }
}
