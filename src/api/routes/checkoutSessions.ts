import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ApiDeps } from '../deps.ts';
import { authOf } from '../auth.ts';
import { createSessionHandler } from '../createSessionHandler.ts';
import { createSession, getSession } from '../../engine/sessions.ts';
import { notFound } from '../../internal/errors.ts';
import { CreatePaymentBody, IdParam, PaymentBSchema, READ_ERRORS, WRITE_ERRORS, errorResponses } from '../schemas.ts';
import { paymentViewB } from '../views.ts';

/**
 * `POST /checkout/sessions` (Interface B): a payment session meant for the hosted checkout page,
 * as Stripe Checkout's. Same body and answer as `POST /payments`; send the customer to
 * `checkoutUrl`, which returns them to `successUrl` once paid. `GET /checkout/sessions/{id}`
 * reads it back at the same path, as Stripe's does (the same answer as `GET /payments/{id}`).
 */
export function checkoutSessionRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const typed = app.withTypeProvider<TypeBoxTypeProvider>();
  typed.get(
    '/checkout/sessions/:id',
    {
      schema: {
        tags: ['Interface B'],
        summary: 'Retrieve a checkout session',
        description: 'The same as GET /payments/{id}.',
        params: IdParam('id', 'ses'),
        response: { 200: PaymentBSchema, ...errorResponses(...READ_ERRORS) },
      },
    },
    async (request) => {
      const auth = authOf(request);
      const row = await getSession(deps.store, { merchantId: auth.merchantId, livemode: auth.livemode, id: request.params.id! });
      if (!row) throw notFound(`checkout session ${request.params.id} not found`);
      return paymentViewB(row, deps.config.publicUrl);
    },
  );
  typed.post(
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
    createSessionHandler(deps, paymentViewB),
  );
}
