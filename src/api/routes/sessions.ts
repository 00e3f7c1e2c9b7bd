import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ApiDeps } from '../deps.ts';
import { authOf } from '../auth.ts';
import { createSessionHandler } from '../createSessionHandler.ts';
import { getSession } from '../../payments/sessions.ts';
import { notFound } from '../../internal/errors.ts';
import { CreateSessionBody, IdParam, READ_ERRORS, SessionASchema, WRITE_ERRORS, errorResponses } from '../schemas.ts';
import { sessionLinks, sessionViewA } from '../views.ts';
import { pendingViewA } from '../choiceViews.ts';
import { getPendingChoice } from '../../payments/choices.ts';

/**
 * Interface A (spec §4.1): `POST /sessions` creates a payment session (201), `GET
 * /sessions/{sessionId}` polls it. Any session of the caller's merchant and mode is readable,
 * whichever interface created it.
 */
export function sessionRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const typed = app.withTypeProvider<TypeBoxTypeProvider>();
  typed.post(
    '/sessions',
    {
      config: { rateLimit: 'create', idempotency: 'in-handler' },
      schema: {
        tags: ['Interface A'],
        summary: 'Create a payment session',
        description:
          'Creates a session in state `created`. `merchantWallet` (an extension of Interface A) is optional when the merchant has chosen a default wallet on the chain. The due amount may exceed `amount` by less than one cent, to tell concurrent sessions on one wallet apart (see `amountDue`). With `paymentOptions` (or without `chain` and `currency`: every pair the merchant can receive) the customer chooses the chain and token first (docs/checkout.md).',
        body: CreateSessionBody,
        response: { 201: SessionASchema, ...errorResponses(...WRITE_ERRORS) },
      },
    },
    createSessionHandler(deps, sessionViewA, pendingViewA),
  );

  typed.get(
    '/sessions/:sessionId',
    {
      schema: {
        tags: ['Interface A'],
        summary: 'Retrieve a payment session (for polling)',
        params: IdParam('sessionId', 'ses'),
        response: { 200: SessionASchema, ...errorResponses(...READ_ERRORS) },
      },
    },
    async (request) => {
      const auth = authOf(request);
      const scope = { merchantId: auth.merchantId, livemode: auth.livemode, id: request.params.sessionId! };
      const row = await getSession(deps.store, scope);
      if (row) return sessionViewA(row, sessionLinks(deps));
      const pending = await getPendingChoice(deps.store, scope);
      if (!pending) throw notFound(`payment session ${request.params.sessionId} not found`);
      return pendingViewA(pending, sessionLinks(deps));
    },
  );
}
