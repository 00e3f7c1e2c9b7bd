import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ApiDeps } from '../deps.ts';
import { authOf } from '../auth.ts';
import { createSessionHandler } from '../createSessionHandler.ts';
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
    createSessionHandler(deps, paymentViewB),
  );
}
