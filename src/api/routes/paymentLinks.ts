import type { FastifyInstance } from 'fastify';
import { Type, type Static } from 'typebox';
import type { Sql } from '../../store/index.ts';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ApiDeps } from '../deps.ts';
import { auditApiChange } from '../audit.ts';
import { authOf } from '../auth.ts';
import { safeUrl } from './webhooks.ts';
import { saveIdempotentResponse } from '../idempotency.ts';
import { liveChains } from '../../internal/config.ts';
import { formatAmount } from '../../internal/money.ts';
import { badRequest, notFound } from '../../internal/errors.ts';
import { createPaymentLink, getPaymentLink, listPaymentLinks, setPaymentLinkActive, setPaymentLinkDiscoverable } from '../../payments/links.ts';
import type { PaymentLink } from '../../payments/link.ts';
import { lineItemsView } from '../../payments/purchase.ts';
import { optionsOf } from '../../payments/options.ts';
import {
  AmountSchema,
  AttributionSchema,
  ChainSchema,
  CurrencySchema,
  DescriptionSchema,
  LineItemsInputSchema,
  LineItemsViewSchema,
  ExpiresInSchema,
  IdParam,
  ListSchema,
  MetadataSchema,
  READ_ERRORS,
  UrlSchema,
  WRITE_ERRORS,
  PayToWalletSchema,
  PriceInputSchema,
  PriceViewSchema,
  PaymentOptionSchema,
  PaymentOptionsInputSchema,
  errorResponses,
  pagingQuery,
} from '../schemas.ts';

export { publicPaymentLinkRoutes } from './paymentLinkVisits.ts';

const X402DiscoverableSchema = Type.Boolean({
  description: 'true lists the link in x402 discovery (`GET /discovery/resources`), public: its price, wallet, description and your name; default false.',
});

const PaymentLinkSchema = Type.Object(
  {
    id: Type.String({ description: 'Payment link identifier (`plink_…`).' }),
    url: Type.String({ format: 'uri', description: 'Public URL: each visit creates a fresh payment session and redirects (303) to its checkout page.' }),
    active: Type.Boolean({ description: 'false once deactivated: visits then get 410.' }),
    amount: Type.Union([Type.String(), Type.Null()], {
      description: 'Token amount of each session, decimal text; null when the link is priced in a fiat currency (`price`).',
    }),
    price: PriceViewSchema,
    currency: Type.Union([CurrencySchema, Type.Null()], { description: "The stablecoin; null when each visit's customer chooses among `paymentOptions`." }),
    chain: Type.Union([ChainSchema, Type.Null()], { description: "The chain; null when each visit's customer chooses among `paymentOptions`." }),
    paymentOptions: Type.Array(PaymentOptionSchema, {
      description:
        "The pairs each visit's customer chooses from (one: no choice). With several, a visit shows the chooser and makes a session only once the customer chooses.",
    }),
    merchantWallet: Type.Union([Type.String(), Type.Null()], {
      description: "Fixed receiving wallet, or null for the merchant's default wallet on the chain at each visit.",
    }),
    metadata: MetadataSchema,
    webhookUrl: Type.Union([Type.String(), Type.Null()]),
    successUrl: Type.Union([Type.String(), Type.Null()]),
    cancelUrl: Type.Union([Type.String(), Type.Null()], { description: 'Copied into each session: where "Cancel and return" takes the customer.' }),
    description: Type.Union([Type.String(), Type.Null()], { description: 'Copied into each session: what is being bought.' }),
    lineItems: LineItemsViewSchema,
    expiresIn: Type.Integer({ description: 'Lifetime in seconds of each session the link creates.' }),
    attribution: Type.Union([AttributionSchema, Type.Null()], {
      description:
        "The attribution mode of each session the link makes (`amount` or `address`), or null for the merchant's default at each visit (solana: always its Solana Pay reference).",
    }),
    x402Discoverable: Type.Boolean({
      description: 'Listed by x402 discovery (`GET /discovery/resources`, docs/agents.md "Discovery") while active, live and payable with x402 here.',
    }),
    sessionsCreated: Type.Integer({ description: 'How many sessions visits have created.' }),
    livemode: Type.Boolean(),
    createdAt: Type.String({ format: 'date-time' }),
    updatedAt: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false, description: 'A reusable payment link.' },
);

export const CreatePaymentLinkBody = Type.Object(
  {
    amount: Type.Optional(AmountSchema),
    price: Type.Optional(PriceInputSchema),
    currency: Type.Optional(CurrencySchema),
    chain: Type.Optional(ChainSchema),
    paymentOptions: Type.Optional(PaymentOptionsInputSchema),
    merchantWallet: Type.Optional(PayToWalletSchema),
    metadata: Type.Optional(MetadataSchema),
    webhookUrl: Type.Optional(UrlSchema),
    successUrl: Type.Optional(UrlSchema),
    cancelUrl: Type.Optional(UrlSchema),
    description: Type.Optional(DescriptionSchema),
    lineItems: Type.Optional(LineItemsInputSchema),
    expiresIn: Type.Optional(ExpiresInSchema),
    attribution: Type.Optional(AttributionSchema),
    x402Discoverable: Type.Optional(X402DiscoverableSchema),
  },
  { additionalProperties: false },
);

const UpdatePaymentLinkBody = Type.Object(
  {
    active: Type.Optional(Type.Boolean({ description: 'false deactivates the link; true reactivates it.' })),
    x402Discoverable: Type.Optional(X402DiscoverableSchema),
  },
  { additionalProperties: false, minProperties: 1 },
);

/** `${publicUrl}/pay/<linkId>`. */
export function paymentLinkUrl(publicUrl: string, id: string): string {
  return `${publicUrl}/pay/${id}`;
}

/**
 * What `POST /payment-links` does with a body that passed its schema: the webhook URL's SSRF
 * check, then {@link createPaymentLink} (the terms checked as for a payment), in one transaction
 * with `inTransaction` (the API's idempotency record, the dashboard's audit entry). The API and
 * the dashboard both create links through here.
 */
export async function createPaymentLinkFromBody<T>(
  deps: Pick<ApiDeps, 'store' | 'config'>,
  params: { merchantId: string; livemode: boolean; body: Static<typeof CreatePaymentLinkBody> },
  inTransaction: (sql: Sql, link: PaymentLink) => Promise<T>,
): Promise<T> {
  const { body } = params;
  if (body.webhookUrl) await safeUrl(body.webhookUrl, deps, params.livemode, 'webhookUrl');
  return deps.store.transaction(async (sql) => {
    const link = await createPaymentLink(sql, { ...body, merchantId: params.merchantId, livemode: params.livemode, liveChains: liveChains(deps.config) });
    return inTransaction(sql, link);
  });
}

/** A payment link as the API shows it. */
export function paymentLinkView(link: PaymentLink, publicUrl: string) {
  return {
    id: link.id,
    url: paymentLinkUrl(publicUrl, link.id),
    active: link.active,
    amount: link.amount === null ? null : formatAmount(link.amount, link.decimals),
    price: link.price,
    currency: link.paymentOptions ? null : link.currency,
    chain: link.paymentOptions ? null : link.chain,
    paymentOptions: optionsOf(link),
    merchantWallet: link.merchantWallet,
    metadata: link.metadata,
    webhookUrl: link.webhookUrl,
    successUrl: link.successUrl,
    cancelUrl: link.cancelUrl,
    description: link.description,
    lineItems: lineItemsView(link.lineItems, link.decimals),
    expiresIn: link.expiresIn,
    attribution: link.attribution,
    x402Discoverable: link.x402Discoverable,
    sessionsCreated: link.sessionsCreated,
    livemode: link.livemode,
    createdAt: link.createdAt.toISOString(),
    updatedAt: link.updatedAt.toISOString(),
  };
}

/**
 * Reusable payment links (Interface B): `POST /payment-links` (201), `GET /payment-links`
 * (newest first, paged), `GET /payment-links/:id`, `PATCH /payment-links/:id` with
 * `{"active": false}` to deactivate (Stripe's model: links are deactivated, never deleted).
 */
export function paymentLinkRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const typed = app.withTypeProvider<TypeBoxTypeProvider>();
  typed.post(
    '/payment-links',
    {
      schema: {
        tags: ['Interface B'],
        summary: 'Create a payment link',
        description:
          'The amount, currency, chain and wallet are checked now, exactly as for a payment (a live link on a chain this gateway does not watch is a 409; a currency this merchant cannot accept on the chain is a 400); each visit to `url` creates a session with them. With `price` instead of `amount`, each visit converts the fiat price into the token then (a 422 at the visit when the feeds cannot price it). With `paymentOptions` (or without `chain` and `currency`: every pair the merchant can receive) each pair is checked, and a visit shows the customer the chooser: the session is created only when the customer chooses (`POST /pay/{id}/choice`); a fiat `price` goes with one pair for now.',
        body: CreatePaymentLinkBody,
        response: { 201: PaymentLinkSchema, ...errorResponses(...WRITE_ERRORS) },
      },
    },
    async (request, reply) => {
      const auth = authOf(request);
      const row = await createPaymentLinkFromBody(deps, { merchantId: auth.merchantId, livemode: auth.livemode, body: request.body }, async (sql, link) => {
        const answer = paymentLinkView(link, deps.config.publicUrl);
        await auditApiChange(sql, request, 'payment_link.created', {
          target: link.id,
          details: {
            amount: answer.amount,
            price: link.price,
            currency: answer.currency,
            chain: answer.chain,
            paymentOptions: answer.paymentOptions,
            merchantWallet: link.merchantWallet,
            webhookUrl: link.webhookUrl,
            x402Discoverable: link.x402Discoverable,
          },
        });
        await saveIdempotentResponse(sql, request, 201, answer);
        return answer;
      });
      return reply.status(201).send(row);
    },
  );

  typed.get(
    '/payment-links',
    {
      schema: {
        tags: ['Interface B'],
        summary: 'List payment links',
        querystring: Type.Object({ ...pagingQuery, active: Type.Optional(Type.Boolean()) }, { additionalProperties: false }),
        response: { 200: ListSchema(PaymentLinkSchema, 'A page of payment links, newest first.'), ...errorResponses(...READ_ERRORS) },
      },
    },
    async (request) => {
      const auth = authOf(request);
      const limit = request.query.limit ?? 20;
      const after = request.query.startingAfter ?? null;
      if (after !== null && !(await getPaymentLink(deps.store, { merchantId: auth.merchantId, livemode: auth.livemode, id: after }))) {
        throw badRequest(`startingAfter ${JSON.stringify(after)} is not a payment link of this account`);
      }
      const rows = await listPaymentLinks(deps.store, {
        merchantId: auth.merchantId,
        livemode: auth.livemode,
        active: request.query.active,
        startingAfter: after ?? undefined,
        limit: limit + 1,
      });
      const page = rows.slice(0, limit).map((row) => paymentLinkView(row, deps.config.publicUrl));
      const hasMore = rows.length > limit;
      return { data: page, hasMore, nextCursor: hasMore ? page[page.length - 1]!.id : null };
    },
  );

  typed.get(
    '/payment-links/:id',
    {
      schema: {
        tags: ['Interface B'],
        summary: 'Retrieve a payment link',
        params: IdParam('id', 'plink'),
        response: { 200: PaymentLinkSchema, ...errorResponses(...READ_ERRORS) },
      },
    },
    async (request) => {
      const auth = authOf(request);
      const link = await getPaymentLink(deps.store, { merchantId: auth.merchantId, livemode: auth.livemode, id: request.params.id! });
      if (!link) throw notFound(`payment link ${request.params.id} not found`);
      return paymentLinkView(link, deps.config.publicUrl);
    },
  );

  typed.patch(
    '/payment-links/:id',
    {
      schema: {
        tags: ['Interface B'],
        summary: 'Deactivate or reactivate a payment link, or list it in x402 discovery',
        params: IdParam('id', 'plink'),
        body: UpdatePaymentLinkBody,
        response: { 200: PaymentLinkSchema, ...errorResponses(400, 401, 403, 404, 429) },
      },
    },
    async (request) => {
      const auth = authOf(request);
      const { active, x402Discoverable } = request.body;
      const target = { merchantId: auth.merchantId, livemode: auth.livemode, id: request.params.id! };
      const link = await deps.store.transaction(async (sql) => {
        const before = await getPaymentLink(sql, target);
        if (!before) throw notFound(`payment link ${request.params.id} not found`);
        let changed = before;
        if (active !== undefined) changed = (await setPaymentLinkActive(sql, { ...target, active }))!;
        // As the dashboard: deactivation is recorded (reactivation routes nothing new).
        if (active === false) await auditApiChange(sql, request, 'payment_link.deactivated', { target: changed.id });
        if (x402Discoverable !== undefined) {
          changed = (await setPaymentLinkDiscoverable(sql, { ...target, discoverable: x402Discoverable }))!;
          // Publishing a link (its price, wallet, description) is recorded both ways, when it changes.
          if (before.x402Discoverable !== x402Discoverable) {
            await auditApiChange(sql, request, 'payment_link.x402_discoverable_changed', { target: changed.id, details: { x402Discoverable } });
          }
        }
        return changed;
      });
      return paymentLinkView(link, deps.config.publicUrl);
    },
  );
}
