import type { FastifyInstance, FastifyReply } from 'fastify';
import { Type } from 'typebox';
import type { Store } from '../store/index.ts';
import { badRequest, UnavailableError, UnprocessableError } from '../internal/errors.ts';
import { chooseOption, getPendingChoiceWithMerchant, pendingPriceOf, type ChoiceConfig } from '../payments/choices.ts';
import { amountOf, optionCosts, type Priced } from '../payments/choicePrices.ts';
import { sendMessagePage } from './negotiation.ts';
import type { PricingDeps } from '../pricing/index.ts';
import type { PaymentOption } from '../payments/options.ts';
import { buildChoice, chooserStyles, chooserViewOf, parseChoiceBody, PaymentChoiceSchema, renderChooserPage, type ChooserSession } from './chooser.ts';
import { loadCheckoutSession, type CheckoutSession } from './view.ts';
import type { PaymentInstructions } from './schema.ts';
import { CheckoutErrorSchema, PaymentInstructionsSchema } from './schema.ts';
import { pageCsp } from './page.ts';
import { setCommonHeaders, setPageHeaders } from './securityHeaders.ts';

/** What the daemon wires in for choices (src/http.ts). */
export interface ChoiceWiring {
  /** The daemon's settings a chosen session is created with; unset: choosing is refused. */
  config?: ChoiceConfig | undefined;
  /** A waiting session's x402 resource and the pairs x402 can pay of it (the x402 stage's); unset: none. */
  x402Of?: ((choice: ChooserSession) => { url: string | null; pairs: PaymentOption[] }) | undefined;
}

/** What the choice routes need: the wiring and the checkout's own. */
interface ChoiceDeps extends ChoiceWiring {
  store: Store;
  https: boolean;
  publicUrl: string;
  frameAncestors: readonly string[];
  instructionsOf: (session: CheckoutSession) => PaymentInstructions;
  /** Fiat prices (the API's feeds and cache): a priced session's pair is converted at the choice; unset: such a choice is refused. */
  pricing?: PricingDeps | undefined;
}

/** GET /checkout/{id}'s JSON answer: the instructions, or a waiting session's options. */
export const CHECKOUT_JSON = {
  schema: {
    oneOf: [PaymentInstructionsSchema, PaymentChoiceSchema],
    description: 'The payment instructions, or the options of a session waiting for the choice (`object: payment_choice`).',
  },
};

/** The session id from the URL, whatever its shape (a browser gets the not-found page for any). */
const SessionParams = Type.Object({ sessionId: Type.String({ minLength: 1, description: 'Session id (`ses_…`).', 'x-not-found': 'checkout session' }) });

/**
 * Answers GET /checkout/{id} for a session waiting for its customer's choice: the chooser page, or
 * with `json` its machine-readable options. Undefined when `id` names no waiting session (the
 * caller answers as before).
 */
async function answerPendingChoice(deps: ChoiceDeps, reply: FastifyReply, params: { id: string; json: boolean }): Promise<FastifyReply | undefined> {
  if (!/^ses_[0-9A-Za-z]{20}$/.test(params.id)) return undefined;
  const session = await getPendingChoiceWithMerchant(deps.store, params.id);
  if (!session) return undefined;
  const x402 = deps.x402Of?.(session) ?? { url: null, pairs: [] };
  const view = chooserViewOf(session);
  // A fiat price: each option's indicative amount at the feeds' rate now (cached 5 s), fixed at the choice.
  const costs =
    session.price && !view.expired ? await optionCosts(deps.pricing, { price: session.price }, session.paymentOptions, session.livemode) : undefined;
  if (params.json) {
    reply.header('Access-Control-Allow-Origin', '*');
    return reply
      .type('application/json; charset=utf-8')
      .send(buildChoice(session, { publicUrl: deps.publicUrl, x402Url: x402.url, x402Pairs: x402.pairs, ...(costs ? { costs } : {}) }));
  }
  setPageHeaders(reply, { csp: pageCsp(deps.frameAncestors, chooserStyles(view)), framable: deps.frameAncestors.length > 0 });
  const html = renderChooserPage(view, { action: `/checkout/${encodeURIComponent(session.id)}/choice`, ...(costs ? { costs } : {}) });
  return reply.type('text/html; charset=utf-8').send(html);
}

/**
 * `POST /checkout/{id}/choice`: the customer (the page's form) or an agent (JSON) fixes the chain
 * and token. No API key: the session id is the capability, as for the page.
 * @returns what GET /checkout/{id} answers a waiting session with ({@link answerPendingChoice}).
 */
export function choiceRoutes(app: FastifyInstance, deps: ChoiceDeps) {
  app.register(async (scoped) => {
    // The chooser is a plain form (no script): its urlencoded body, small.
    scoped.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 1024 }, (_request, body, done) => {
      done(null, Object.fromEntries(new URLSearchParams(body as string)));
    });
    scoped.post<{ Params: { sessionId: string }; Body: unknown }>(
      '/checkout/:sessionId/choice',
      {
        config: { auth: 'none', rateLimit: 'create' },
        schema: {
          tags: ['checkout'],
          summary: "Fix the customer's choice of chain and token",
          description:
            'No API key: the session id is the capability. Body `{ "chain": "base", "currency": "USDC" }` (JSON), or the checkout page\'s form (`option=base:USDC`, answered with a 303 back to the page). Fixes the pair for good and only then reserves what the payment needs (the due amount, or the deposit address); answers the payment instructions. A session priced in a fiat currency is converted for the chosen pair now (Chainlink feeds; the sandbox\'s fixed rates), and records `price` and `priceQuote`. The same pair again answers the same (idempotent); another pair once chosen is a 409; a pair not among the options a 400; an expired session a 410; a stale or off-peg feed a 422 and an unreadable one a 503, both leaving the session waiting for a choice.',
          params: SessionParams,
          response: {
            200: { ...PaymentInstructionsSchema, description: "The chosen session's payment instructions." },
            303: Type.Null({ description: 'The form: back to the checkout page, which now shows the instructions.' }),
            400: { ...CheckoutErrorSchema, description: 'Not a (chain, currency) pair, or not one of the options.' },
            404: { ...CheckoutErrorSchema, description: 'No such session.' },
            409: { ...CheckoutErrorSchema, description: 'Another pair was chosen already.' },
            410: { ...CheckoutErrorSchema, description: 'The session expired before the choice.' },
            422: {
              description:
                'A fiat price cannot be converted now (a stale feed, an answer that is not a price, the token off its peg): nothing changed. The form gets a page that says so.',
              content: { 'application/json': { schema: CheckoutErrorSchema }, 'text/html': { schema: { type: 'string' } } },
            },
            429: { ...CheckoutErrorSchema, description: 'Too many requests from this IP address.' },
            503: {
              description: "No RPC answered for the fiat price's feeds: retry; nothing changed. The form gets a page that says so.",
              content: { 'application/json': { schema: CheckoutErrorSchema }, 'text/html': { schema: { type: 'string' } } },
            },
          },
        },
      },
      async (request, reply) => {
        setCommonHeaders(reply, { https: deps.https });
        reply.header('Access-Control-Allow-Origin', '*');
        const pair = parseChoiceBody(request.body);
        if (!pair) throw badRequest('give the chosen pair as {"chain": …, "currency": …} (e.g. {"chain": "base", "currency": "USDC"})');
        if (!deps.config) throw badRequest('this gateway does not take choices here');
        const config = deps.config;
        const id = request.params.sessionId;
        // A fiat price is converted for the pair before the transaction: a refused or unreadable
        // feed (422/503) leaves the session waiting, and no lock is held while the feeds are read.
        const form = request.headers['content-type']?.startsWith('application/x-www-form-urlencoded');
        const pending = await pendingPriceOf(deps.store, id, pair);
        if (pending && !deps.pricing) throw badRequest('this gateway cannot convert fiat prices here');
        let priced: Priced | undefined;
        try {
          priced = pending && (await amountOf(deps.pricing!, { price: pending.price, ...pair }, pending.livemode));
        } catch (error) {
          // The customer's browser gets a page that says so (the form can be sent again), agents the JSON error.
          if (!form || !(error instanceof UnprocessableError || error instanceof UnavailableError)) throw error;
          return sendMessagePage(reply, {
            status: error instanceof UnprocessableError ? 422 : 503,
            title: 'Price not available right now',
            text: `The price cannot be converted into ${pair.currency} right now. Go back and try again in a few minutes, or choose another option.`,
            https: deps.https,
          });
        }
        const { session, chosen } = await deps.store.transaction((sql) => chooseOption(sql, { id, pair, config, ...(priced ? { priced } : {}) }));
        if (chosen)
          request.log.info({ msg: 'Payment option chosen', session_id: session.id, chain: session.chain, currency: session.currency, priced: Boolean(priced) });
        if (form) return reply.redirect(`/checkout/${encodeURIComponent(session.id)}`, 303);
        const loaded = await loadCheckoutSession(deps.store, session.id);
        return reply.send(deps.instructionsOf(loaded!));
      },
    );
  });
  return (reply: FastifyReply, params: { id: string; json: boolean }) => answerPendingChoice(deps, reply, params);
}
