import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ApiDeps } from '../deps.ts';
import { authOf } from '../auth.ts';
import { safeUrl } from './webhooks.ts';
import { saveIdempotentResponse } from '../idempotency.ts';
import { checkSessionTerms } from '../../payments/terms.ts';
import { liveChains } from '../../internal/config.ts';
import { formatAmount } from '../../internal/money.ts';
import { badRequest, notFound } from '../../internal/errors.ts';
import { newId } from '../../internal/crypto.ts';
import {
  AmountSchema,
  ChainSchema,
  CurrencySchema,
  ExpiresInSchema,
  IdParam,
  ListSchema,
  MetadataSchema,
  READ_ERRORS,
  UrlSchema,
  WRITE_ERRORS,
  WalletAddressSchema,
  errorResponses,
  pagingQuery,
} from '../schemas.ts';
import { LINK_COLUMNS, type LinkRow } from './paymentLinkVisits.ts';

export { MAX_LINK_RESERVATIONS_PER_PRICE, MAX_OPEN_SESSIONS_PER_LINK, publicPaymentLinkRoutes } from './paymentLinkVisits.ts';

const PaymentLinkSchema = Type.Object(
  {
    id: Type.String({ description: 'Payment link identifier (`plink_…`).' }),
    url: Type.String({ format: 'uri', description: 'Public URL: each visit creates a fresh payment session and redirects (303) to its checkout page.' }),
    active: Type.Boolean({ description: 'false once deactivated: visits then get 410.' }),
    amount: Type.String(),
    currency: CurrencySchema,
    chain: ChainSchema,
    merchantWallet: Type.Union([Type.String(), Type.Null()], { description: 'Fixed receiving wallet, or null for the merchant\'s default wallet on the chain at each visit.' }),
    metadata: MetadataSchema,
    webhookUrl: Type.Union([Type.String(), Type.Null()]),
    successUrl: Type.Union([Type.String(), Type.Null()]),
    expiresIn: Type.Integer({ description: 'Lifetime in seconds of each session the link creates.' }),
    sessionsCreated: Type.Integer({ description: 'How many sessions visits have created.' }),
    livemode: Type.Boolean(),
    createdAt: Type.String({ format: 'date-time' }),
    updatedAt: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false, description: 'A reusable payment link.' },
);

const CreatePaymentLinkBody = Type.Object(
  {
    amount: AmountSchema,
    currency: CurrencySchema,
    chain: ChainSchema,
    merchantWallet: Type.Optional(WalletAddressSchema),
    metadata: Type.Optional(MetadataSchema),
    webhookUrl: Type.Optional(UrlSchema),
    successUrl: Type.Optional(UrlSchema),
    expiresIn: Type.Optional(ExpiresInSchema),
  },
  { additionalProperties: false },
);

const UpdatePaymentLinkBody = Type.Object(
  { active: Type.Boolean({ description: 'false deactivates the link; true reactivates it.' }) },
  { additionalProperties: false },
);

/** `${publicUrl}/pay/<linkId>`. */
export function paymentLinkUrl(publicUrl: string, id: string): string {
  return `${publicUrl}/pay/${id}`;
}

function view(row: LinkRow, publicUrl: string) {
  return {
    id: row.id,
    url: paymentLinkUrl(publicUrl, row.id),
    active: row.active,
    amount: formatAmount(BigInt(row.amount), row.decimals),
    currency: row.currency,
    chain: row.chain,
    merchantWallet: row.merchant_wallet,
    metadata: row.metadata,
    webhookUrl: row.webhook_url,
    successUrl: row.success_url,
    expiresIn: row.expires_in,
    sessionsCreated: row.sessions_created,
    livemode: row.livemode,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
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
          'The amount, currency, chain and wallet are checked now, exactly as for a payment (a live link on a chain this gateway does not watch is a 409; a currency this merchant cannot accept on the chain is a 400); each visit to `url` creates a session with them.',
        body: CreatePaymentLinkBody,
        response: { 201: PaymentLinkSchema, ...errorResponses(...WRITE_ERRORS) },
      },
    },
    async (request, reply) => {
      const auth = authOf(request);
      const body = request.body;
      if (body.webhookUrl) await safeUrl(body.webhookUrl, deps, auth.livemode, 'webhookUrl');
      const row = await deps.store.transaction(async (sql) => {
        // The checks a visit's session will get, now: a link that no visit could pay is a 4xx here.
        const terms = await checkSessionTerms(sql, {
          merchantId: auth.merchantId,
          livemode: auth.livemode,
          amount: body.amount,
          currency: body.currency,
          chain: body.chain,
          merchantWallet: body.merchantWallet,
          expiresIn: body.expiresIn,
          liveChains: liveChains(deps.config),
        });
        const { rows } = await sql.query<LinkRow>(
          `INSERT INTO payment_links (id, merchant_id, livemode, chain, currency, decimals, amount, merchant_wallet, metadata, webhook_url, success_url, expires_in)
           VALUES ($1, $2, $3, $4, $5, $6, $7::numeric, $8, $9, $10, $11, $12) RETURNING ${LINK_COLUMNS}`,
          [
            newId('plink'),
            auth.merchantId,
            auth.livemode,
            body.chain,
            body.currency,
            terms.decimals,
            terms.amount.toString(),
            terms.merchantWallet ?? null,
            body.metadata ?? {},
            body.webhookUrl ?? null,
            body.successUrl ?? null,
            terms.expiresIn,
          ],
        );
        const answer = view(rows[0]!, deps.config.publicUrl);
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
      if (after !== null) {
        const { rowCount } = await deps.store.query('SELECT 1 FROM payment_links WHERE id = $1 AND merchant_id = $2 AND livemode = $3', [after, auth.merchantId, auth.livemode]);
        if (!rowCount) throw badRequest(`startingAfter ${JSON.stringify(after)} is not a payment link of this account`);
      }
      const { rows } = await deps.store.query<LinkRow>(
        `SELECT ${LINK_COLUMNS} FROM payment_links
         WHERE merchant_id = $1 AND livemode = $2 AND ($3::boolean IS NULL OR active = $3)
           AND ($4::text IS NULL OR (created_at, id) < (SELECT created_at, id FROM payment_links WHERE id = $4))
         ORDER BY created_at DESC, id DESC LIMIT $5`,
        [auth.merchantId, auth.livemode, request.query.active ?? null, after, limit + 1],
      );
      const page = rows.slice(0, limit).map((row) => view(row, deps.config.publicUrl));
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
      const { rows } = await deps.store.query<LinkRow>(`SELECT ${LINK_COLUMNS} FROM payment_links WHERE id = $1 AND merchant_id = $2 AND livemode = $3`, [
        request.params.id,
        auth.merchantId,
        auth.livemode,
      ]);
      if (!rows[0]) throw notFound(`payment link ${request.params.id} not found`);
      return view(rows[0], deps.config.publicUrl);
    },
  );

  typed.patch(
    '/payment-links/:id',
    {
      schema: {
        tags: ['Interface B'],
        summary: 'Deactivate or reactivate a payment link',
        params: IdParam('id', 'plink'),
        body: UpdatePaymentLinkBody,
        response: { 200: PaymentLinkSchema, ...errorResponses(400, 401, 403, 404, 429) },
      },
    },
    async (request) => {
      const auth = authOf(request);
      const { rows } = await deps.store.query<LinkRow>(
        `UPDATE payment_links SET active = $4, updated_at = now() WHERE id = $1 AND merchant_id = $2 AND livemode = $3 RETURNING ${LINK_COLUMNS}`,
        [request.params.id, auth.merchantId, auth.livemode, request.body.active],
      );
      if (!rows[0]) throw notFound(`payment link ${request.params.id} not found`);
      return view(rows[0], deps.config.publicUrl);
    },
  );
}
