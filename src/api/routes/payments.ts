import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ApiDeps } from '../deps.ts';
import { getPendingChoice } from '../../payments/choices.ts';
import { pendingViewB } from '../choiceViews.ts';
import { authOf } from '../auth.ts';
import { createSessionHandler } from '../createSessionHandler.ts';
import { getSession, listSessions } from '../../payments/sessions.ts';
import { badRequest, notFound } from '../../internal/errors.ts';
import {
  ChainSchema,
  CreatePaymentBody,
  CurrencySchema,
  IdParam,
  ListSchema,
  PaymentBSchema,
  READ_ERRORS,
  WRITE_ERRORS,
  errorResponses,
  pagingQuery,
} from '../schemas.ts';
import { paymentViewB, sessionLinks } from '../views.ts';

/** Default page size of list endpoints (Stripe's 10 is small for reconciliation jobs; 20 is BTCPay's feel). */
export const DEFAULT_PAGE_SIZE = 20;

const ListPaymentsQuery = Type.Object(
  {
    ...pagingQuery,
    status: Type.Optional(
      Type.Unsafe<string>({
        type: 'string',
        enum: ['pending', 'confirming', 'confirmed', 'settled', 'expired', 'failed'],
        description: 'Only payments in this Interface B state (`pending` includes sessions in state `created`).',
      }),
    ),
    chain: Type.Optional(ChainSchema),
    currency: Type.Optional(CurrencySchema),
    createdGte: Type.Optional(
      Type.String({ format: 'date-time', description: 'Created at or after this ISO 8601 time.', 'x-error': 'must be an ISO 8601 date-time' }),
    ),
    createdLt: Type.Optional(
      Type.String({ format: 'date-time', description: 'Created before this ISO 8601 time.', 'x-error': 'must be an ISO 8601 date-time' }),
    ),
  },
  { additionalProperties: false },
);

/**
 * Interface B (spec §4.2): `POST /payments` (201, the §2.2 view: a new payment is `pending`),
 * `GET /payments/:id`, `GET /payments` (newest first, cursor paging with `limit` and
 * `startingAfter`, filters on status, chain, currency and creation time).
 */
/**
 * A creation-time filter as a Date: the schema checks the format, this the range Postgres takes
 * (year 1 to 9999), so `0000-01-01T00:00:00Z` is a 400, not a database error.
 */
function timeFilter(text: string | undefined, name: string): Date | null {
  if (text === undefined) return null;
  const date = new Date(text);
  const year = date.getUTCFullYear();
  if (Number.isNaN(date.getTime()) || year < 1 || year > 9999) throw badRequest(`${name} must be a date-time between years 1 and 9999`);
  return date;
}

export function paymentRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const typed = app.withTypeProvider<TypeBoxTypeProvider>();
  typed.post(
    '/payments',
    {
      config: { rateLimit: 'create', idempotency: 'in-handler' },
      schema: {
        tags: ['Interface B'],
        summary: 'Create a payment',
        description:
          'Creates a payment session; answers 201 with the payment in state `pending`. `merchantWallet` is required unless the merchant has chosen a default wallet on the chain (then that one is used).',
        body: CreatePaymentBody,
        response: { 201: PaymentBSchema, ...errorResponses(...WRITE_ERRORS) },
      },
    },
    createSessionHandler(deps, paymentViewB, pendingViewB),
  );

  typed.get(
    '/payments/:id',
    {
      schema: {
        tags: ['Interface B'],
        summary: 'Retrieve a payment',
        params: IdParam('id', 'ses'),
        response: { 200: PaymentBSchema, ...errorResponses(...READ_ERRORS) },
      },
    },
    readPaymentB(deps, 'payment'),
  );

  typed.get(
    '/payments',
    {
      schema: {
        tags: ['Interface B'],
        summary: 'List payments',
        description: "Newest first. Pass the previous page's `nextCursor` as `startingAfter` for the next page.",
        querystring: ListPaymentsQuery,
        response: { 200: ListSchema(PaymentBSchema, 'A page of payments, newest first.'), ...errorResponses(...READ_ERRORS) },
      },
    },
    async (request) => {
      const auth = authOf(request);
      const query = request.query;
      const limit = query.limit ?? DEFAULT_PAGE_SIZE;
      const statuses = query.status === undefined ? null : query.status === 'pending' ? ['created', 'pending'] : [query.status];
      if (query.startingAfter !== undefined) {
        const cursor = await getSession(deps.store, { merchantId: auth.merchantId, livemode: auth.livemode, id: query.startingAfter });
        if (!cursor) throw badRequest(`startingAfter ${JSON.stringify(query.startingAfter)} is not a payment of this account`);
      }
      const rows = await listSessions(deps.store, {
        merchantId: auth.merchantId,
        livemode: auth.livemode,
        statuses,
        chain: query.chain,
        currency: query.currency,
        createdGte: timeFilter(query.createdGte, 'createdGte'),
        createdLt: timeFilter(query.createdLt, 'createdLt'),
        startingAfter: query.startingAfter,
        limit: limit + 1,
      });
      const page = rows.slice(0, limit).map((session) => paymentViewB(session, sessionLinks(deps)));
      const hasMore = rows.length > limit;
      return { data: page, hasMore, nextCursor: hasMore ? page[page.length - 1]!.id : null };
    },
  );
}

/**
 * The handler of `GET …/{id}` answering a session in Interface B's shape (`/payments/{id}`,
 * `/checkout/sessions/{id}`); `noun` names it in the 404.
 */
export function readPaymentB(deps: ApiDeps, noun: string) {
  return async (request: FastifyRequest<{ Params: { id?: string } }>) => {
    const auth = authOf(request);
    const scope = { merchantId: auth.merchantId, livemode: auth.livemode, id: request.params.id! };
    const row = await getSession(deps.store, scope);
    if (row) return paymentViewB(row, sessionLinks(deps));
    // A session still waiting for its customer's choice (another merchant's or mode's is not found).
    const pending = await getPendingChoice(deps.store, scope);
    if (!pending) throw notFound(`${noun} ${request.params.id} not found`);
    return pendingViewB(pending, sessionLinks(deps));
  };
}
