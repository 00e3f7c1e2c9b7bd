import { amountOf } from '../createSessionHandler.ts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ApiDeps } from '../deps.ts';
import { authOf } from '../auth.ts';
import { errorResponses, READ_ERRORS } from '../schemas.ts';
import { liveChains } from '../../internal/config.ts';
import { badRequest, notFound, UnavailableError } from '../../internal/errors.ts';
import { getPaymentLinkById, openSessionFromLink } from '../../payments/links.ts';
import { linkOfWaiting, openWaitingFromLink } from '../../payments/linkChoices.ts';
import { getSessionById } from '../../payments/sessions.ts';
import { PaymentStatusSchema } from '../../checkout/schema.ts';
import { setCommonHeaders } from '../../checkout/securityHeaders.ts';
import { encodeHeader, HEADERS, type SessionAnswer, type X402 } from '../../x402/index.ts';
import type { QuoteForPair } from '../../x402/choiceOffers.ts';
import { paymentResourceUrl } from '../../x402/svm/payload.ts';

/**
 * x402 over HTTP (docs/agents.md): every session's `x402Url` and every payment link's
 * `/pay/{id}/x402` answer x402 clients (402 + `PAYMENT-REQUIRED`, then the retried request with
 * `PAYMENT-SIGNATURE` settled and answered with `PAYMENT-RESPONSE`), and the facilitator
 * endpoints `/x402/verify`, `/x402/settle`, `/x402/supported` under the API prefix.
 */

const X402_HEADERS_DOC =
  'v2: `PAYMENT-REQUIRED` on the 402 (base64 JSON: x402Version 2, resource, accepts[] of the exact scheme on `eip155:<chainId>` or, for Solana sessions, `solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp` with `extra.feePayer`), `PAYMENT-SIGNATURE` on the retried request, `PAYMENT-RESPONSE` on the 200 (base64 JSON: success, transaction, network, payer). v1: the 402 body carries `x402Version: 1` and `accepts` with `maxAmountRequired` and network names; `X-PAYMENT` and `X-PAYMENT-RESPONSE`.';

const ChallengeSchema = Type.Object(
  {
    x402Version: Type.Literal(1),
    error: Type.String({ description: 'Why payment is required, or why the payment sent was refused (`<reason>: <sentence>`).' }),
    reason: Type.Optional(
      Type.String({ description: 'The refusal reason code (`invalid_exact_evm_*`, `session_not_payable`, …) when a payment was sent and refused.' }),
    ),
    accepts: Type.Array(Type.Object({}, { additionalProperties: true }), { description: 'x402 v1 requirements (networks v1 names only: polygon, base).' }),
  },
  { additionalProperties: false, description: '402: the x402 v1 body; v2 clients read the `PAYMENT-REQUIRED` header.' },
);

/**
 * Why an x402 resource answers 503: mostly not the database. A session advertises its `x402Url`
 * only where x402 can be paid (src/x402/availability.ts), so a client meets these by building
 * the URL itself, or when the operator changed the configuration since the session was read.
 */
const X402_UNAVAILABLE =
  "x402 cannot take this payment in this gateway: x402 is not enabled on the session's chain (the operator has not set `SVC_<CHAIN>_RELAYER_KEY` with an RPC URL), a sandbox session while the sandbox does not run in this process, none of a waiting session's options (or, for a fiat price, no feed answered), or x402 does not run in this process at all; the `error` says which. Also when the database is unreachable (then with Retry-After).";

const ResourceResponses = {
  200: { ...PaymentStatusSchema, description: 'Paid (with `PAYMENT-RESPONSE`), or nothing is left to pay: the session state.' },
  402: ChallengeSchema,
  ...errorResponses(400, 404, 410, 429),
  503: { ...errorResponses(503)[503], description: X402_UNAVAILABLE },
};

/** The payment header of a request and its protocol version, if it carries one. */
function paymentOf(request: FastifyRequest): { header: string; version: 1 | 2 } | undefined {
  const v2 = request.headers[HEADERS.signature];
  const v1 = request.headers[HEADERS.v1Payment];
  const header = v2 ?? v1;
  if (header === undefined) return undefined;
  if (Array.isArray(header)) throw badRequest('send one payment header');
  return { header, version: v2 !== undefined ? 2 : 1 };
}

function x402Of(deps: ApiDeps): X402 {
  if (!deps.x402) throw new UnavailableError('x402 does not run in this process');
  return deps.x402;
}

function send(reply: FastifyReply, answer: SessionAnswer, https: boolean) {
  setCommonHeaders(reply, { https });
  reply.header('access-control-allow-origin', '*');
  reply.header('access-control-expose-headers', 'PAYMENT-REQUIRED, PAYMENT-RESPONSE, X-PAYMENT-RESPONSE');
  switch (answer.kind) {
    case 'required':
      reply.header(HEADERS.required, encodeHeader(answer.required));
      return reply.status(402).send({ ...answer.v1, ...(answer.reason ? { reason: answer.reason } : {}) });
    case 'paid':
      reply.header(answer.version === 2 ? HEADERS.response : HEADERS.v1Response, encodeHeader(answer.response));
      return reply.status(200).send(answer.session);
    case 'state':
      return reply.status(200).send(answer.session);
  }
}

/** How long a 402 waits for the feeds of one option: an agent's request should not hang on an RPC that does not answer. */
export const X402_QUOTE_TIMEOUT_MS = 5_000;

/**
 * A fiat-priced waiting session's conversion per option, with the API's feed reader (src/pricing,
 * 5 s cache); an option whose feeds do not answer in {@link X402_QUOTE_TIMEOUT_MS} is not listed.
 */
function quoteOf(deps: ApiDeps): QuoteForPair {
  return async (price, pair, livemode) => {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new UnavailableError(`no price feed for ${pair.currency} on ${pair.chain} answered within ${X402_QUOTE_TIMEOUT_MS / 1000} s`)),
        X402_QUOTE_TIMEOUT_MS,
      );
    });
    try {
      return await Promise.race([amountOf(deps.pricing, { price, ...pair }, livemode), late]);
    } finally {
      clearTimeout(timer);
    }
  };
}

/** `GET /checkout/{sessionId}/x402` and `GET /pay/{linkId}/x402`, at the root like the checkout; no API key. */
export function x402ResourceRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const typed = app.withTypeProvider<TypeBoxTypeProvider>();
  const https = deps.config.publicUrl.startsWith('https:');
  typed.get(
    '/checkout/:sessionId/x402',
    {
      config: { auth: 'none' },
      schema: {
        tags: ['checkout'],
        summary: "Pay a session with x402 (the session's x402Url)",
        description: `No API key: the session id is the capability. Without a payment header: 402 with the requirements (the exact remaining amount of the session's token to the merchant's wallet: an EIP-3009 or Permit2 signature on EVM chains, a partially signed SPL TransferChecked with the gateway's fee payer on solana). A session waiting for the customer's choice of chain and token lists one entry per option x402 can pay here (EVM and Solana), and paying one chooses it (docs/agents.md, Waiting sessions). With one: the payment is verified, submitted once by the gateway's gas-only relayer (on solana co-signed by its fee payer), and the request answered when the transfer is mined (confirmed on solana); a refused payment is a 402 whose error names the reason. ${X402_HEADERS_DOC}`,
        params: Type.Object({ sessionId: Type.String({ minLength: 1, description: 'Session id (`ses_…`).', 'x-not-found': 'checkout session' }) }),
        response: ResourceResponses,
      },
    },
    async (request, reply) =>
      send(reply, await x402Of(deps).session({ sessionId: request.params.sessionId, payment: paymentOf(request), quote: quoteOf(deps) }), https),
  );

  typed.get(
    '/pay/:linkId/x402',
    {
      config: { auth: 'none', rateLimit: 'create' },
      schema: {
        tags: ['Payment links (public)'],
        summary: 'Pay a payment link with x402',
        description: `Without a payment header: opens a fresh session from the link (as GET /pay/{linkId}) and answers its 402; the requirements' resource is that session's x402Url. A link with several paymentOptions opens a session waiting for the choice, whose 402 lists one entry per option x402 can pay here; paying one chooses it. With one: settles it for the session its \`resource.url\` names, which must be a session of this link (x402 v2 only). ${X402_HEADERS_DOC}`,
        params: Type.Object({ linkId: Type.String({ minLength: 1, description: 'Payment link identifier (`plink_…`).', 'x-not-found': 'payment link' }) }),
        response: { ...ResourceResponses, ...errorResponses(409) },
      },
    },
    async (request, reply) => {
      const x402 = x402Of(deps);
      const payment = paymentOf(request);
      if (!payment) {
        // Several options: a session waiting for the choice, which paying one of its 402's entries makes (payments/linkChoices.ts).
        const link = await getPaymentLinkById(deps.store, request.params.linkId);
        if (link?.paymentOptions && link.paymentOptions.length > 1) {
          const choice = await openWaitingFromLink(deps.store, {
            linkId: link.id,
            monitorWindowSeconds: deps.config.monitorWindowSeconds,
            feeBps: deps.config.feeBps,
            liveChains: liveChains(deps.config),
          });
          return send(reply, await x402.session({ sessionId: choice.id, quote: quoteOf(deps) }), https);
        }
        const session = await openSessionFromLink(deps.store, {
          linkId: request.params.linkId,
          monitorWindowSeconds: deps.config.monitorWindowSeconds,
          feeBps: deps.config.feeBps,
          liveChains: liveChains(deps.config),
          quote: (link) => amountOf(deps.pricing, { price: link.price!, chain: link.chain, currency: link.currency }, link.livemode),
        });
        return send(reply, await x402.session({ sessionId: session.id }), https);
      }
      const sessionId = await linkSessionOfPayment(deps, request.params.linkId, payment);
      return send(reply, await x402.session({ sessionId, payment, quote: quoteOf(deps) }), https);
    },
  );
}

/** The session of `linkId` that a v2 payment's `resource.url` names (`…/checkout/<id>/x402`). */
async function linkSessionOfPayment(deps: ApiDeps, linkId: string, payment: { header: string; version: 1 | 2 }): Promise<string> {
  // Any scheme's payload (EVM or Solana): only `resource.url` is read here.
  const url = paymentResourceUrl(payment.header);
  const match = url ? /\/checkout\/(ses_[0-9A-Za-z]{20})\/x402$/.exec(url) : null;
  if (!match) throw badRequest("a payment link's x402 payment must be x402 v2 and name the session it pays in resource.url (as @x402/fetch does)");
  const session = await getSessionById(deps.store, { id: match[1]!, fields: ['paymentLinkId'] });
  const ofLink = session ? session.paymentLinkId : await linkOfWaiting(deps.store, match[1]!);
  if (ofLink !== linkId) throw notFound(`no session ${match[1]} of payment link ${linkId}`);
  return match[1]!;
}

const FacilitatorBody = Type.Object(
  {
    x402Version: Type.Integer({ minimum: 1, maximum: 2 }),
    paymentPayload: Type.Record(Type.String(), Type.Unknown(), { description: 'The payment payload the client sent (decoded PAYMENT-SIGNATURE).' }),
    paymentRequirements: Type.Record(Type.String(), Type.Unknown(), { description: 'The requirements the resource server asked for.' }),
  },
  { additionalProperties: true },
);

const VerifyResponse = Type.Object(
  {
    isValid: Type.Boolean(),
    invalidReason: Type.Optional(Type.String()),
    invalidMessage: Type.Optional(Type.String()),
    payer: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);

const SettleResponse = Type.Object(
  {
    success: Type.Boolean(),
    errorReason: Type.Optional(Type.String()),
    errorMessage: Type.Optional(Type.String()),
    transaction: Type.String({ description: 'The settled transaction hash; empty when it failed.' }),
    network: Type.String(),
    payer: Type.Optional(Type.String()),
    sessionId: Type.Optional(Type.String({ description: 'The session the settlement was recorded as (events and webhooks as for any session).' })),
  },
  { additionalProperties: false },
);

/** The facilitator under /api/v1 (spec §7), authenticated with the merchant's API key. */
export function x402FacilitatorRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const typed = app.withTypeProvider<TypeBoxTypeProvider>();
  const description =
    "x402 facilitator for the merchant's own resource servers (@x402/express, @x402/hono: `new HTTPFacilitatorClient({ url: '<gateway>/api/v1/x402', createAuthHeaders })`). `payTo` must be one of the merchant's verified wallets on the chain; a live key settles on mainnets with the relayer, a test key in the sandbox (test networks, fake token).";
  typed.post(
    '/x402/verify',
    {
      config: { auth: 'read' },
      schema: {
        tags: ['x402'],
        summary: 'Verify an x402 payment',
        description: `${description} Checks the payment without sending anything: on EVM the authorization (signature, recipient, amount, window, nonce unused, balance); on Solana the payer's transaction (the instructions allowed, mint, exact amount, destination, fee payer in no instruction) and its simulation.`,
        body: FacilitatorBody,
        response: { 200: VerifyResponse, ...errorResponses(...READ_ERRORS) },
      },
    },
    async (request) => x402Of(deps).verify(authOf(request), request.body as never),
  );
  typed.post(
    '/x402/settle',
    {
      schema: {
        tags: ['x402'],
        summary: 'Settle an x402 payment',
        description: `${description} Verifies, submits the authorization (EVM) or the co-signed transaction (Solana) once (the same payload again answers with the same transaction), answers when it is mined (confirmed on Solana), and records it as a session of the merchant with its events and webhooks. A \`payment-identifier\` id used before with another payload is a 409 and nothing is sent.`,
        body: FacilitatorBody,
        response: { 200: SettleResponse, ...errorResponses(400, 401, 403, 409, 429, 503) },
      },
    },
    async (request) => x402Of(deps).settle(authOf(request), request.body as never),
  );
  typed.get(
    '/x402/supported',
    {
      schema: {
        tags: ['x402'],
        summary: 'What this facilitator settles',
        description: `${description} The kinds (x402 version, exact scheme, network) for the key's mode, and the relayer addresses (\`eip155:*\`) and Solana fee payer (\`solana:*\`, listed with a live key when the operator configured it).`,
        response: {
          200: Type.Object(
            {
              kinds: Type.Array(
                Type.Object(
                  {
                    x402Version: Type.Integer(),
                    scheme: Type.Literal('exact'),
                    network: Type.String(),
                    extra: Type.Optional(
                      Type.Record(Type.String(), Type.String(), {
                        description: "Solana's kind only: `{ feePayer }`, the fee payer the payer's transaction must name (x402's SVM exact scheme).",
                      }),
                    ),
                  },
                  { additionalProperties: false },
                ),
              ),
              extensions: Type.Array(Type.String()),
              signers: Type.Record(Type.String(), Type.Array(Type.String())),
            },
            { additionalProperties: false },
          ),
          ...errorResponses(...READ_ERRORS),
        },
      },
    },
    async (request) => x402Of(deps).supported(authOf(request).livemode),
  );
}
