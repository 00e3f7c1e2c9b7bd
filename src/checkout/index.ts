import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Store } from '../store/index.ts';
import type { Config } from '../internal/config.ts';
import type { Logger } from '../internal/logger.ts';
import { notFound } from '../internal/errors.ts';
import { loadCheckoutSession, loadCheckoutSessions, type CheckoutSession } from './view.ts';
import { buildInstructions, statusOf } from './instructions.ts';
import { pageCsp, pageCspFor, renderCheckoutPage, renderNotFoundPage, type SandboxPanel } from './page.ts';
import { qrSvg } from './qr.ts';
import { createBatchedReader, createLiveFeeds, runLiveFeed } from './liveFeed.ts';
import { MAX_REFUND_REQUESTS_PER_SESSION, requestRefundFromCheckout } from './refundRequest.ts';
import { setCommonHeaders, setPageHeaders } from './securityHeaders.ts';
import {
  CheckoutErrorSchema,
  PaymentStatusSchema,
  RefundRequestBody,
  RefundRequestResponse,
  TransactionProofBody,
  TransactionProofResponse,
} from './schema.ts';
import { proveTransaction } from './proof.ts';
import type { TransactionLookups } from '../ingest/lookup.ts';
import { receiptRoutes } from './receiptRoutes.ts';
import { restartPathOf } from './wayBack.ts';
import { CHECKOUT_JSON, choiceRoutes, type ChoiceWiring } from './choiceRoutes.ts';
import type { PricingDeps } from '../pricing/index.ts';

export { buildInstructions, checkoutUrls } from './instructions.ts';
export { loadCheckoutSession, checkoutViewOf, CHECKOUT_VIEWS, type CheckoutView, type CheckoutSession } from './view.ts';
export type { PaymentInstructions, PaymentStatus } from './schema.ts';
export type { SandboxPanel } from './page.ts';

/** What the checkout routes need. */
export interface CheckoutDeps {
  store: Store;
  config: Pick<Config, 'publicUrl'> & Partial<Pick<Config, 'checkoutFrameAncestors'>>;
  logger: Logger;
  /** Markup for sandbox sessions' tools slot (the sandbox's "simulate payment"); empty when absent. */
  sandboxPanel?: SandboxPanel;
  /** Looks payers' transactions up on the chains (POST /checkout/:sessionId/transactions). */
  lookups: TransactionLookups;
  /** A session's x402 resource where it can be paid with x402 here (the x402 stage's `urlOf`); unset: none. */
  x402UrlOf?: (session: CheckoutSession) => string | null;
  /** The customer's choice of chain and token (choiceRoutes.ts); unset: choices are refused. */
  choice?: ChoiceWiring | undefined;
  /** Fiat prices (the API's, with its feed cache): the chooser's indicative amounts and the conversion at the choice. */
  pricing?: PricingDeps | undefined;
}

// No pattern or size: every id reaches the handler, so a browser gets the not-found page for any of them.
const SessionParams = Type.Object({ sessionId: Type.String({ minLength: 1, description: 'Session id (`ses_…`).', 'x-not-found': 'checkout session' }) });

/** Views after which nothing on the page changes any more (the live feed ends there). */
const FINAL_VIEWS = ['paid', 'expired', 'failed'];

export { prefersJson, sendMessagePage, wantsPage } from './negotiation.ts';
import { prefersJson } from './negotiation.ts';

/**
 * The hosted checkout, at the root (not under /api/v1), with no API key: the session id in the
 * URL is the capability the payer holds, as with Stripe's checkout URLs.
 *
 * - `GET /checkout/:sessionId`: the page, or with `Accept: application/json` the payment
 *   instructions for agents.
 * - `GET /checkout/:sessionId/status`: the live part of the instructions, for polling.
 * - `GET /checkout/:sessionId/events`: the same as server-sent events while it changes.
 * - `GET /checkout/:sessionId/qr.svg`: the QR code of the wallet URI for what is left to pay.
 * - `POST /checkout/:sessionId/refund`: the payer asks for a refund (`refund.requested`).
 * - `POST /checkout/:sessionId/transactions`: the payer proves a payment by its transaction.
 */
export function registerCheckout(parent: FastifyInstance, deps: CheckoutDeps): void {
  // Registered as a plugin so the routes are added after @fastify/swagger's hooks are in place
  // (and so appear in the OpenAPI document), still at the root path.
  parent.register(async (app) => checkoutRoutes(app, deps));
}

function checkoutRoutes(app: FastifyInstance, deps: CheckoutDeps): void {
  const https = deps.config.publicUrl.startsWith('https:');
  const frameAncestors = deps.config.checkoutFrameAncestors ?? [];
  const page = { csp: pageCsp(frameAncestors), framable: frameAncestors.length > 0 };
  const feeds = createLiveFeeds();
  // Every open page's live feed reads through this: one query per tick for all of them.
  const readSession = createBatchedReader((ids) => loadCheckoutSessions(deps.store, ids));
  app.addHook('preClose', async () => feeds.closeAll());

  async function load(request: FastifyRequest<{ Params: { sessionId: string } }>): Promise<CheckoutSession> {
    const session = await loadCheckoutSession(deps.store, request.params.sessionId);
    if (!session) throw notFound(`no checkout session ${request.params.sessionId}`);
    return session;
  }
  const instructionsOf = (session: CheckoutSession) =>
    buildInstructions(session, { publicUrl: deps.config.publicUrl, x402Url: deps.x402UrlOf?.(session) ?? null });
  receiptRoutes(app, { store: deps.store, https, instructionsOf, load });
  const answerChooser = choiceRoutes(app, {
    ...deps.choice,
    store: deps.store,
    https,
    publicUrl: deps.config.publicUrl,
    frameAncestors,
    instructionsOf,
    pricing: deps.pricing,
  });

  app.get<{ Params: { sessionId: string } }>(
    '/checkout/:sessionId',
    {
      config: { auth: 'none' },
      schema: {
        tags: ['checkout'],
        summary: 'Hosted checkout page, or the payment instructions as JSON',
        description:
          'No API key: the session id is the capability. Browsers get the HTML page. With `Accept: application/json` the response is the machine-readable payment instructions an agent needs to pay (pay `amountRemainingBaseUnits` of `token.address` to `recipient` on `chainId`, or open `paymentUri`, before `expiresAt`, then watch `statusUrl`). Responses are `Cache-Control: no-store`; the page is served with a strict CSP (no external assets, no framing).',
        params: SessionParams,
        response: {
          200: {
            description: 'The page (text/html) or the payment instructions (application/json), by Accept.',
            content: {
              'application/json': CHECKOUT_JSON,
              'text/html': { schema: { type: 'string', description: 'The checkout page.' } },
            },
          },
          404: { ...CheckoutErrorSchema, description: 'No such session.' },
        },
      },
    },
    async (request, reply) => {
      setCommonHeaders(reply, { https });
      const json = prefersJson(request.headers.accept);
      const session = await loadCheckoutSession(deps.store, request.params.sessionId);
      if (!session) {
        // A session waiting for its customer's choice of chain and token: the chooser (chooser.ts).
        const chooser = await answerChooser(reply, { id: request.params.sessionId, json });
        if (chooser) return chooser;
        if (json) throw notFound(`no checkout session ${request.params.sessionId}`);
        setPageHeaders(reply, page);
        return reply.status(404).type('text/html; charset=utf-8').send(renderNotFoundPage());
      }
      const instructions = instructionsOf(session);
      if (json) {
        reply.header('Access-Control-Allow-Origin', '*');
        return reply.type('application/json; charset=utf-8').send(instructions);
      }
      setPageHeaders(reply, { ...page, csp: pageCspFor(instructions, frameAncestors) });
      const html = renderCheckoutPage(instructions, {
        qrUrl: `/checkout/${encodeURIComponent(session.id)}/qr.svg`,
        sandboxPanel: deps.sandboxPanel,
        restartUrl: restartPathOf(session.paymentLinkId),
      });
      return reply.type('text/html; charset=utf-8').send(html);
    },
  );

  app.get<{ Params: { sessionId: string } }>(
    '/checkout/:sessionId/status',
    {
      config: { auth: 'none' },
      schema: {
        tags: ['checkout'],
        summary: 'Live payment status of a checkout session (poll it)',
        description: 'No API key. The changing part of the payment instructions; poll every few seconds, or use the events feed.',
        params: SessionParams,
        response: { 200: PaymentStatusSchema, 404: { ...CheckoutErrorSchema, description: 'No such session.' } },
      },
    },
    async (request, reply) => {
      setCommonHeaders(reply, { https });
      reply.header('Access-Control-Allow-Origin', '*');
      return reply.send(statusOf(instructionsOf(await load(request))));
    },
  );

  app.get<{ Params: { sessionId: string } }>(
    '/checkout/:sessionId/events',
    {
      config: { auth: 'none' },
      // A HEAD of an endless stream would never end.
      exposeHeadRoute: false,
      schema: {
        tags: ['checkout'],
        summary: 'Live payment status as server-sent events',
        description:
          'No API key. `text/event-stream`: a `status` event (the JSON of GET /checkout/{sessionId}/status) at once and whenever it changes; the stream ends after the payment is paid, expired or failed, and after ten minutes (EventSource reconnects).',
        params: SessionParams,
        response: {
          200: { description: 'An event stream.', content: { 'text/event-stream': { schema: { type: 'string' } } } },
          404: { ...CheckoutErrorSchema, description: 'No such session.' },
        },
      },
    },
    async (request, reply) => {
      const first = await load(request);
      const controller = new AbortController();
      feeds.add(controller);
      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, {
        'Content-Type': 'text/event-stream; charset=utf-8',
        'Cache-Control': 'no-store',
        'X-Content-Type-Options': 'nosniff',
        'Referrer-Policy': 'no-referrer',
        'Access-Control-Allow-Origin': '*',
        // nginx and similar proxies buffer responses unless told not to.
        'X-Accel-Buffering': 'no',
        Connection: 'keep-alive',
      });
      res.on('close', () => controller.abort());
      let initial: CheckoutSession | undefined = first;
      try {
        await runLiveFeed({
          res,
          signal: controller.signal,
          read: async () => {
            const session = initial ?? (await readSession(first.id));
            initial = undefined;
            return session && statusOf(instructionsOf(session));
          },
          done: (status) => FINAL_VIEWS.includes(status.view),
        });
      } catch (error) {
        request.log.warn({ msg: 'Checkout live feed ended with an error', session_id: first.id, err: error });
        if (!res.destroyed) res.end();
      } finally {
        feeds.delete(controller);
      }
    },
  );

  app.get<{ Params: { sessionId: string }; Querystring: { amount?: string } }>(
    '/checkout/:sessionId/qr.svg',
    {
      config: { auth: 'none' },
      schema: {
        tags: ['checkout'],
        summary: 'QR code of the wallet payment URI',
        description:
          'No API key. An SVG QR code of `paymentUri` (what is left to pay). 404 when nothing should be paid now. The `amount` query parameter only busts caches.',
        params: SessionParams,
        querystring: Type.Object({ amount: Type.Optional(Type.String({ maxLength: 80 })) }),
        response: {
          200: { description: 'image/svg+xml', content: { 'image/svg+xml': { schema: { type: 'string' } } } },
          404: { ...CheckoutErrorSchema, description: 'No such session, or nothing to pay.' },
        },
      },
    },
    async (request, reply) => {
      setCommonHeaders(reply, { https });
      const instructions = instructionsOf(await load(request));
      if (!instructions.paymentUri) throw notFound('nothing is to be paid for this session now');
      // An SVG opened on its own is a document: let it run nothing.
      reply.header('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'");
      const svg = await qrSvg(instructions.paymentUri, { label: `QR code of ${instructions.paymentUri}` });
      return reply.type('image/svg+xml').send(svg);
    },
  );

  app.post<{ Params: { sessionId: string }; Body: RefundRequestBody }>(
    '/checkout/:sessionId/refund',
    {
      config: { auth: 'none' },
      schema: {
        tags: ['checkout'],
        summary: 'The payer asks for a refund',
        description: `No API key: the session id is the capability. Allowed once money arrived and the payment is confirmed or expired; the amount is what the session received. Records a refund request and a \`refund.requested\` event for the merchant, who sends the refund from its own wallet (the gateway never holds funds). One open request per session, at most ${MAX_REFUND_REQUESTS_PER_SESSION} per session.`,
        params: SessionParams,
        body: RefundRequestBody,
        response: {
          201: RefundRequestResponse,
          400: { ...CheckoutErrorSchema, description: 'Bad body or a destination that is not an address on the session chain.' },
          404: { ...CheckoutErrorSchema, description: 'No such session.' },
          409: { ...CheckoutErrorSchema, description: 'Nothing to refund yet, or a request is already open.' },
          429: { ...CheckoutErrorSchema, description: 'Too many refund requests for this session.' },
        },
      },
    },
    async (request, reply) => {
      setCommonHeaders(reply, { https });
      const result = await requestRefundFromCheckout(deps.store, request.params.sessionId, request.body);
      request.log.info({ msg: 'Refund requested from checkout', session_id: result.sessionId, refund_id: result.id });
      return reply.status(201).send(result);
    },
  );

  app.post<{ Params: { sessionId: string }; Body: TransactionProofBody }>(
    '/checkout/:sessionId/transactions',
    {
      config: { auth: 'none', rateLimit: 'chain' },
      schema: {
        tags: ['checkout'],
        summary: 'The payer proves a payment by its transaction hash',
        description:
          "No API key: the session id is the capability, and the payer's signature is the proof. For a payer (a customer's wallet, an agent) that sent the transfer itself: the gateway looks the transaction up on the session's chain at once, checks that `signature` is the transfer's sender's signature of the session's `proofMessage` for this transaction, and binds its transfers into the session's wallet, in one of the session's tokens, to this session (match method `claim`) under the engine's rules: never a transfer that is exactly another open session's due amount, never more than this session still owes plus the merchant's tolerance (those are refused with 409). The session then confirms as usual. 200 when the transfers count now, 202 when the chain watcher has not stored them yet (they count as soon as it does, normally within seconds). A transaction is bound to one session only; proving it again for the same session answers the same. Refused, changing nothing: a hash that cannot be one on the session's chain, a transaction not mined yet (404: retry), a failed one, one that pays another wallet or token or was made before the session, and one that pays or was claimed by another session (409). Sandbox sessions are paid with POST /api/v1/sandbox/sessions/{sessionId}/pay instead (400). Rate-limited per IP like payment creation.",
        params: SessionParams,
        body: TransactionProofBody,
        response: {
          200: { ...TransactionProofResponse, description: "Bound: the transaction's transfers count for this session." },
          202: { ...TransactionProofResponse, description: 'Claimed: the transfers count as soon as the chain watcher stores them.' },
          400: {
            ...CheckoutErrorSchema,
            description:
              "A hash that cannot be a transaction on the session's chain, a missing signature (the error quotes the message to sign), or a sandbox session.",
          },
          403: { ...CheckoutErrorSchema, description: "The signature is not the transfer's sender's over this session's proof message for this transaction." },
          404: { ...CheckoutErrorSchema, description: 'No such session, or the transaction is not on the chain (not mined yet: retry in a few seconds).' },
          409: {
            ...CheckoutErrorSchema,
            description:
              "The transaction failed, does not pay this session (another wallet or token, nothing watched, made before the session), pays or is claimed by another session, is exactly another open session's due amount, or moves more than this session still owes.",
          },
          429: { ...CheckoutErrorSchema, description: 'Too many proofs from this IP address.' },
          503: { ...CheckoutErrorSchema, description: "The chain's RPC did not answer, or this gateway has none for the chain: retry later." },
        },
      },
    },
    async (request, reply) => {
      setCommonHeaders(reply, { https });
      reply.header('Access-Control-Allow-Origin', '*');
      const outcome = await proveTransaction(deps.store, deps.lookups, {
        sessionId: request.params.sessionId,
        txHash: request.body.txHash,
        signature: request.body.signature,
        gateway: deps.config.publicUrl,
      });
      request.log.info({ msg: 'Transaction proved for a session', session_id: outcome.session.id, tx_hash: outcome.txHash, bound: outcome.bound });
      return reply.status(outcome.bound ? 200 : 202).send({
        object: 'transaction_proof',
        sessionId: outcome.session.id,
        chain: outcome.session.chain,
        txHash: outcome.txHash,
        bound: outcome.bound,
        message: outcome.message,
        payment: statusOf(instructionsOf(outcome.session)),
      });
    },
  );
}
