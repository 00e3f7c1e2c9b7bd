import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ApiDeps } from '../deps.ts';
import { auditApiChange } from '../audit.ts';
import { OPTIONAL_BODY } from '../optionalBody.ts';
import { authOf } from '../auth.ts';
import { saveIdempotentResponse } from '../idempotency.ts';
import {
  AmountSchema,
  ChainSchema,
  CurrencySchema,
  IdParam,
  ListSchema,
  MetadataSchema,
  READ_ERRORS,
  WRITE_ERRORS,
  errorResponses,
  pagingQuery,
} from '../schemas.ts';
import { getRefund, listRefunds, rejectRefund, requestRefund } from '../../payments/refunds.ts';
import { completeRefundVerified } from '../../payments/refundCompletion.ts';
import { REFUND_STATUSES, refundView, type RefundStatus } from '../../payments/refund.ts';
import { badRequest } from '../../internal/errors.ts';
import { getSession } from '../../payments/sessions.ts';

const Nullable = (schema: ReturnType<typeof Type.String>) => Type.Union([schema, Type.Null()]);

const RefundSchema = Type.Object(
  {
    id: Type.String({ description: 'Refund identifier (`rfd_…`).' }),
    paymentId: Type.String(),
    amount: Type.String({ description: 'Decimal text.' }),
    amountBaseUnits: Type.String(),
    currency: CurrencySchema,
    chain: ChainSchema,
    status: Type.Unsafe<string>({ type: 'string', enum: [...REFUND_STATUSES] }),
    address: Type.String({ description: 'Where the merchant sends the refund.' }),
    reason: Nullable(Type.String()),
    metadata: MetadataSchema,
    txHash: Nullable(Type.String({ description: "The merchant's refund transaction, once completed." })),
    rejectionReason: Nullable(Type.String()),
    requiresAttention: Type.Boolean({
      description:
        'true once a reorg removed money from the payment and left its completed refunds larger than its confirmed money (a `refund.flagged` event is sent). The merchant refunded money that is no longer there: check the payment. Never cleared.',
    }),
    attentionReason: Nullable(Type.String({ description: 'Why the refund requires attention, with the amounts at that moment.' })),
    flaggedAt: Nullable(Type.String({ format: 'date-time' })),
    livemode: Type.Boolean(),
    createdAt: Type.String({ format: 'date-time' }),
    completedAt: Nullable(Type.String({ format: 'date-time' })),
    rejectedAt: Nullable(Type.String({ format: 'date-time' })),
  },
  {
    additionalProperties: false,
    description:
      'A refund request. The gateway holds no funds: the merchant sends the refund from its wallet, then completes the request with the transaction hash, or rejects it.',
  },
);

export const CreateRefundBody = Type.Object(
  {
    paymentId: Type.String({ minLength: 1, maxLength: 64, description: 'The payment (session) to refund.' }),
    amount: Type.Optional({
      ...AmountSchema,
      description: "Decimal text; default: all the payment's confirmed money (`amountReceived`) not yet refunded or requested.",
    }),
    address: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Refund destination; default: the sender of the payment.' })),
    reason: Type.Optional(Type.String({ maxLength: 500 })),
    metadata: Type.Optional(MetadataSchema),
  },
  { additionalProperties: false },
);

/**
 * Refunds (Interface B): `POST /refunds` (201, `refund.requested`), `GET /refunds`,
 * `GET /refunds/:id`, `POST /refunds/:id/complete` with `{txHash}` (`refund.completed`),
 * `POST /refunds/:id/reject` with optional `{reason}` (`refund.rejected`). The total of requested
 * and completed refunds never exceeds the payment's confirmed money (`amountReceived`; pending
 * money counts once it confirms), checked again at completion.
 */
export function refundRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const typed = app.withTypeProvider<TypeBoxTypeProvider>();
  typed.post(
    '/refunds',
    {
      schema: {
        tags: ['Interface B'],
        summary: 'Request a refund',
        description:
          "Bounded by the payment's confirmed money (`amountReceived`) less the refunds requested or completed: 400 when the amount exceeds what was received, 409 when the payment is not confirmed (or underpaid) yet or when only money still pending (`amountPending`) would cover it.",
        body: CreateRefundBody,
        response: { 201: RefundSchema, ...errorResponses(...WRITE_ERRORS, 404) },
      },
    },
    async (request, reply) => {
      const auth = authOf(request);
      const answer = await deps.store.transaction(async (sql) => {
        const refund = refundView(await requestRefund(sql, { ...request.body, merchantId: auth.merchantId, livemode: auth.livemode }));
        await saveIdempotentResponse(sql, request, 201, refund);
        return refund;
      });
      return reply.status(201).send(answer);
    },
  );

  typed.get(
    '/refunds',
    {
      schema: {
        tags: ['Interface B'],
        summary: 'List refunds',
        querystring: Type.Object(
          {
            ...pagingQuery,
            paymentId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
            status: Type.Optional(Type.Unsafe<RefundStatus>({ type: 'string', enum: [...REFUND_STATUSES], description: 'Only refunds in this state.' })),
          },
          { additionalProperties: false },
        ),
        response: { 200: ListSchema(RefundSchema, 'A page of refunds, newest first.'), ...errorResponses(...READ_ERRORS) },
      },
    },
    async (request) => {
      const auth = authOf(request);
      const limit = request.query.limit ?? 20;
      if (request.query.startingAfter !== undefined) {
        await getRefund(deps.store, { merchantId: auth.merchantId, livemode: auth.livemode, id: request.query.startingAfter }).catch(() => {
          throw badRequest(`startingAfter ${JSON.stringify(request.query.startingAfter)} is not a refund of this account`);
        });
      }
      if (
        request.query.paymentId !== undefined &&
        !(await getSession(deps.store, { merchantId: auth.merchantId, livemode: auth.livemode, id: request.query.paymentId }))
      ) {
        throw badRequest(`paymentId ${JSON.stringify(request.query.paymentId)} is not a payment of this account`);
      }
      const rows = await listRefunds(deps.store, {
        merchantId: auth.merchantId,
        livemode: auth.livemode,
        paymentId: request.query.paymentId,
        status: request.query.status,
        startingAfter: request.query.startingAfter,
        limit: limit + 1,
      });
      const page = rows.slice(0, limit).map(refundView);
      const hasMore = rows.length > limit;
      return { data: page, hasMore, nextCursor: hasMore ? page[page.length - 1]!.id : null };
    },
  );

  typed.get(
    '/refunds/:id',
    {
      schema: {
        tags: ['Interface B'],
        summary: 'Retrieve a refund',
        params: IdParam('id', 'rfd'),
        response: { 200: RefundSchema, ...errorResponses(...READ_ERRORS) },
      },
    },
    async (request) => {
      const auth = authOf(request);
      return refundView(await getRefund(deps.store, { merchantId: auth.merchantId, livemode: auth.livemode, id: request.params.id! }));
    },
  );

  typed.post(
    '/refunds/:id/complete',
    {
      schema: {
        tags: ['Interface B'],
        summary: 'Complete a refund with its transaction hash',
        description:
          "The gateway verifies the transaction on chain before the refund counts as completed. Live: it must be mined and successful, as deep as the chain's confirmation rule for payments (e.g. 32 blocks on polygon; solana: commitment `confirmed`), and hold a token transfer of the payment's token from the payment's receiving wallet to the refund's `address` of exactly the refund's amount; one such transfer completes one refund. Sandbox: a well-formed hash is accepted (no chain exists), once. 400 when the transaction failed or pays something else (the message says what it pays); 409 when the refund is not in state `requested`, when the payment's confirmed money (`amountReceived`) no longer covers the completed refunds plus this one (a reorg removed a transfer, or the money is still pending), when the transaction is not found or not deep enough yet, or when it already completed another refund; 503 when the chain's RPC does not answer.",
        params: IdParam('id', 'rfd'),
        body: Type.Object(
          { txHash: Type.String({ minLength: 1, maxLength: 100, description: 'EVM: 0x + 64 hex; solana: base58 signature.' }) },
          { additionalProperties: false },
        ),
        response: { 200: RefundSchema, ...errorResponses(...WRITE_ERRORS, 404) },
      },
    },
    async (request) => {
      const auth = authOf(request);
      const params = { merchantId: auth.merchantId, livemode: auth.livemode, id: request.params.id!, txHash: request.body.txHash };
      const completed = await completeRefundVerified(deps.store, deps.lookups, params, async (sql, refund) => {
        const shown = refundView(refund);
        await auditApiChange(sql, request, 'refund.completed', {
          target: refund.id,
          details: { txHash: refund.txHash, amount: shown.amount, to: refund.toAddress },
        });
        await saveIdempotentResponse(sql, request, 200, shown);
      });
      return refundView(completed);
    },
  );

  typed.post(
    '/refunds/:id/reject',
    {
      schema: {
        tags: ['Interface B'],
        summary: 'Reject a refund request',
        description: '409 when the refund is not in state `requested`. The amount becomes refundable again.',
        params: IdParam('id', 'rfd'),
        body: Type.Union([Type.Object({ reason: Type.Optional(Type.String({ maxLength: 500 })) }, { additionalProperties: false }), Type.Null()], {
          description: 'Optional: {"reason": "…"}.',
        }),
        ...OPTIONAL_BODY,
        response: { 200: RefundSchema, ...errorResponses(...WRITE_ERRORS, 404) },
      },
    },
    async (request) => {
      const auth = authOf(request);
      return deps.store.transaction(async (sql) => {
        const refund = refundView(
          await rejectRefund(sql, { merchantId: auth.merchantId, livemode: auth.livemode, id: request.params.id!, reason: request.body?.reason }),
        );
        await auditApiChange(sql, request, 'refund.rejected', { target: refund.id, details: { amount: refund.amount, reason: request.body?.reason ?? null } });
        await saveIdempotentResponse(sql, request, 200, refund);
        return refund;
      });
    },
  );
}
