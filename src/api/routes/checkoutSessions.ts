import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ApiDeps } from '../deps.ts';
import { createSessionHandler } from '../createSessionHandler.ts';
import { readPaymentB } from './payments.ts';
import { CreatePaymentBody, IdParam, PaymentBSchema, READ_ERRORS, WRITE_ERRORS, errorResponses } from '../schemas.ts';
import { paymentViewB } from '../views.ts';
import { pendingViewB } from '../choiceViews.ts';

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
    readPaymentB(deps, 'checkout session'),
  );
  typed.post(
    '/checkout/sessions',
    {
      config: { rateLimit: 'create', idempotency: 'in-handler' },
      schema: {
        tags: ['Interface B'],
        summary: 'Create a checkout session',
        description:
          'The same as POST /payments; redirect the customer to `checkoutUrl`. With `paymentOptions` (or without `chain` and `currency`: every pair the merchant can receive) the page asks the customer to choose the chain and token first.',
        body: CreatePaymentBody,
        response: { 201: PaymentBSchema, ...errorResponses(...WRITE_ERRORS) },
      },
    },
    createSessionHandler(deps, paymentViewB, pendingViewB),
  );
}
