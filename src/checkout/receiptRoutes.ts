import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Store } from '../store/index.ts';
import { NotFoundError, notFound } from '../internal/errors.ts';
import { getSessionById } from '../payments/sessions.ts';
import { explorerTxUrl, loadChains } from '../internal/chains.ts';
import { formatAmount } from '../internal/money.ts';
import { getMerchantLogo } from '../accounts/logo.ts';
import { sessionPaymentTransactions } from '../payments/receipt.ts';
import { renderMessagePage, pageCsp } from './page.ts';
import { receiptCsp, renderReceiptPage } from './receipt.ts';
import { setCommonHeaders, setPageHeaders } from './securityHeaders.ts';
import { CheckoutErrorSchema, type PaymentInstructions } from './schema.ts';
import { isSessionId, type CheckoutSession } from './view.ts';

const SessionParams = Type.Object({ sessionId: Type.String({ minLength: 1, description: 'Session id (`ses_…`).', 'x-not-found': 'checkout session' }) });

/** A year: the logo URL carries its hash (`?v=`), so a changed logo is a new URL and the old bytes may be cached for good. */
const LOGO_IMMUTABLE = 'public, max-age=31536000, immutable';

interface ReceiptDeps {
  store: Store;
  https: boolean;
  instructionsOf: (session: CheckoutSession) => PaymentInstructions;
  load: (request: FastifyRequest<{ Params: { sessionId: string } }>) => Promise<CheckoutSession>;
}

/**
 * The checkout's brand and receipt resources, beside the page (same capability: the session id):
 *
 * - `GET /checkout/:sessionId/logo`: the session's merchant's logo from this origin (the page's
 *   CSP allows images from itself only), with its stored type, `nosniff`, and a long cache when
 *   the `v` query names the current version.
 * - `GET /checkout/:sessionId/receipt`: the printable receipt, once the payment is confirmed.
 */
export function receiptRoutes(app: FastifyInstance, deps: ReceiptDeps): void {
  app.get<{ Params: { sessionId: string }; Querystring: { v?: string } }>(
    '/checkout/:sessionId/logo',
    {
      config: { auth: 'none' },
      schema: {
        tags: ['checkout'],
        summary: "The merchant's logo",
        description:
          "No API key. The logo of the session's merchant: image/png, image/jpeg or image/webp (never SVG), `X-Content-Type-Options: nosniff`. With `v` equal to the version in the instructions' `merchant.logoUrl` it is cacheable for a year (a new logo is a new URL); otherwise `no-cache` with an ETag. 404 when the merchant has no logo.",
        params: SessionParams,
        querystring: Type.Object({ v: Type.Optional(Type.String({ maxLength: 64 })) }),
        response: {
          200: {
            description: 'The image.',
            content: {
              'image/png': { schema: { type: 'string' } },
              'image/jpeg': { schema: { type: 'string' } },
              'image/webp': { schema: { type: 'string' } },
            },
          },
          304: { description: 'Not modified (If-None-Match).', type: 'null' },
          404: { ...CheckoutErrorSchema, description: 'No such session, or its merchant has no logo.' },
        },
      },
    },
    async (request, reply) => {
      const id = request.params.sessionId;
      if (!isSessionId(id)) throw notFound(`no checkout session ${id}`);
      const session = await getSessionById(deps.store, { id, fields: ['merchantId'] });
      const logo = session && (await getMerchantLogo(deps.store, session.merchantId));
      setCommonHeaders(reply, { https: deps.https });
      if (!logo) throw notFound(session ? 'this merchant has no logo' : `no checkout session ${id}`);
      const etag = `"${logo.sha256}"`;
      const current = request.query.v !== undefined && logo.sha256.startsWith(request.query.v) && request.query.v.length >= 16;
      reply.header('Cache-Control', current ? LOGO_IMMUTABLE : 'no-cache');
      reply.header('ETag', etag);
      // An image opened on its own is still a document: let it run and load nothing.
      reply.header('Content-Security-Policy', "default-src 'none'; sandbox");
      reply.header('Cross-Origin-Resource-Policy', 'same-origin');
      reply.header('Content-Disposition', 'inline; filename="logo"');
      if (request.headers['if-none-match'] === etag) return reply.status(304).send();
      return reply.type(logo.contentType).send(logo.bytes);
    },
  );

  app.get<{ Params: { sessionId: string } }>(
    '/checkout/:sessionId/receipt',
    {
      config: { auth: 'none' },
      schema: {
        tags: ['checkout'],
        summary: "The customer's printable receipt",
        description:
          'No API key: the session id is the capability. An HTML page (print-friendly) with the merchant, what was bought, the amount paid, the transaction hash(es) with their explorer links (live sessions), the date and the session id. Only for a paid session (`confirmed` or `settled`): 404 for an unknown session, 409 before the payment is confirmed or when it never was.',
        params: SessionParams,
        response: {
          200: { description: 'The receipt page.', content: { 'text/html': { schema: { type: 'string' } } } },
          404: { description: 'No such session (a page).', content: { 'text/html': { schema: { type: 'string' } } } },
          409: { description: 'The payment is not confirmed (a page).', content: { 'text/html': { schema: { type: 'string' } } } },
        },
      },
    },
    async (request, reply) => {
      setCommonHeaders(reply, { https: deps.https });
      const message = (status: number, title: string, text: string) => {
        setPageHeaders(reply, { csp: pageCsp(), framable: false });
        return reply.status(status).type('text/html; charset=utf-8').send(renderMessagePage(title, text));
      };
      let session: CheckoutSession;
      try {
        session = await deps.load(request);
      } catch (error) {
        if (error instanceof NotFoundError) return message(404, 'Receipt not found', 'There is no payment at this address.');
        throw error;
      }
      const instructions = deps.instructionsOf(session);
      if (instructions.view !== 'paid') {
        return message(409, 'No receipt yet', 'A receipt is available once the payment is confirmed. Go back to the payment page to see its status.');
      }
      const chain = loadChains()[session.chain];
      const transactions = (await sessionPaymentTransactions(deps.store, session.id)).map((tx) => ({
        txHash: tx.txHash,
        amount: formatAmount(tx.amount, session.decimals),
        // Sandbox transactions are on a simulated chain: no explorer knows them.
        explorerUrl: session.livemode ? explorerTxUrl(chain, tx.txHash) : undefined,
      }));
      setPageHeaders(reply, { csp: receiptCsp(instructions), framable: false });
      return reply.type('text/html; charset=utf-8').send(renderReceiptPage(instructions, transactions));
    },
  );
}
