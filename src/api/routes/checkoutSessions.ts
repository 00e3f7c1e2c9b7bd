import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ApiDeps } from '../deps.ts';
import { authOf } from '../auth.ts';
import { safeUrl } from './webhooks.ts';
import { saveIdempotentResponse } from '../idempotency.ts';
import { createSession } from '../../engine/sessions.ts';
import { CreatePaymentBody, PaymentBSchema, WRITE_ERRORS, errorResponses } from '../schemas.ts';
import { paymentViewB } from '../views.ts';

/**
 * `POST /checkout/sessions` (Interface B): a payment session meant for the hosted checkout page,
 * as Stripe Checkout's. Same body and answer as `POST /payments`; send the customer to
 * `checkoutUrl`, which returns them to `successUrl` once paid.
 */
export function checkoutSessionRoutes(app: FastifyInstance, deps: ApiDeps): void {
  app.withTypeProvider<TypeBoxTypeProvider>().post(
    '/checkout/sessions',
    {
      config: { rateLimit: 'create' },
      schema: {
        tags: ['Interface B'],
        summary: 'Create a checkout session',
        description: 'The same as POST /payments; redirect the customer to `checkoutUrl`.',
        body: CreatePaymentBody,
        response: { 201: PaymentBSchema, ...errorResponses(...WRITE_ERRORS) },
      },
    },
    async (request, reply) => {
      const auth = authOf(request);
      if (request.body.webhookUrl) await safeUrl(request.body.webhookUrl, deps, auth.livemode);
      const view = await deps.store.transaction(async (sql) => {
        const row = await createSession(sql, { ...request.body, merchantId: auth.merchantId, livemode: auth.livemode, monitorWindowSeconds: deps.config.monitorWindowSeconds });
        const answer = paymentViewB(row, deps.config.publicUrl);
        await saveIdempotentResponse(sql, request, 201, answer);
        return answer;
      });
      return reply.status(201).send(view);
    },
  );
}
