import type { FastifyInstance } from 'fastify';
import { Type, type TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ApiDeps } from '../deps.ts';
import { authOf } from '../auth.ts';
import { forbidden, UnavailableError } from '../../internal/errors.ts';
import { formatAmount } from '../../internal/money.ts';
import { getSession } from '../../payments/sessions.ts';
import { SANDBOX_OUTCOMES } from '../../sandbox/index.ts';
import { AmountSchema, IdParam, WRITE_ERRORS, errorResponses } from '../schemas.ts';

const SimulatePaymentBody = Type.Object(
  {
    outcome: Type.Optional(
      Type.Unsafe<(typeof SANDBOX_OUTCOMES)[number]>({
        type: 'string',
        enum: [...SANDBOX_OUTCOMES],
        description:
          'What to simulate (default `exact`): `exact`, `underpaid` (half of what is left), `overpaid` (what is left + 10%), `late` (the session expires, then is paid), `reorged` (paid, then removed by a reorg before it confirms), `failed` (half paid, then the session expires: payment.failed), `expired` (expires now with nothing paid).',
      }),
    ),
    amount: Type.Optional(AmountSchema),
  },
  { additionalProperties: false },
);

const SimulatedPaymentSchema = Type.Object({
  sessionId: Type.String(),
  outcome: Type.String(),
  txHash: Type.Union([Type.String(), Type.Null()], { description: 'The simulated (fake) transaction hash; null for `expired`.' }),
  amount: Type.String({ description: 'What the simulated payer sent, decimal text.' }),
  blockNumber: Type.Union([Type.String(), Type.Null()]),
  status: Type.String({ description: 'The session status right after the simulation (confirmations then advance on the simulated chain).' }),
  livemode: Type.Literal(false),
});

const SimulatedSweepSchema = Type.Object({
  sessionId: Type.String(),
  txHash: Type.String({ description: 'The simulated sweep transaction.' }),
  from: Type.String({ description: "The session's deposit address." }),
  to: Type.String({ description: "The merchant's wallet, where the money ends." }),
  amount: Type.String({ description: 'What the sweep moved, decimal text.' }),
  amountBaseUnits: Type.String({ description: '`amount` in base units.' }),
  blockNumber: Type.String(),
  livemode: Type.Literal(false),
});

/**
 * `POST /sandbox/sessions/{sessionId}/pay`: test keys only. Pays a sandbox session on the
 * simulated chain; the real engine and webhook delivery take it from there.
 */
export function sandboxRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const typed = app.withTypeProvider<TypeBoxTypeProvider>();
  typed.post(
    '/sandbox/sessions/:sessionId/pay',
    {
      schema: {
        tags: ['Sandbox'],
        summary: 'Simulate a payment for a sandbox session (test keys only)',
        params: IdParam('sessionId', 'ses'),
        body: SimulatePaymentBody,
        response: { 200: SimulatedPaymentSchema, ...errorResponses(...WRITE_ERRORS, 404, 503) },
      },
    },
    async (request) => {
      const auth = authOf(request);
      if (auth.livemode) throw forbidden('sandbox endpoints need a test key (svc_test_… or svc_sk_…); live sessions are paid on-chain');
      if (!deps.sandbox) throw new UnavailableError('the sandbox is not running in this process');
      const { sessionId } = request.params as { sessionId: string };
      const body = request.body;
      const result = await deps.sandbox.pay({
        merchantId: auth.merchantId,
        sessionId,
        outcome: body.outcome ?? 'exact',
        amount: body.amount,
        store: deps.store,
      });
      const session = await getSession(deps.store, { merchantId: auth.merchantId, livemode: false, id: sessionId });
      return {
        sessionId,
        outcome: result.outcome,
        txHash: result.txHash,
        amount: formatAmount(result.amount, session!.decimals),
        blockNumber: result.blockNumber?.toString() ?? null,
        status: session!.status,
        livemode: false as const,
      };
    },
  );

  typed.post(
    '/sandbox/sessions/:sessionId/sweep',
    {
      schema: {
        tags: ['Sandbox'],
        summary: 'Simulate the sweep of a sandbox address-mode session (test keys only)',
        description:
          "Moves what the session's deposit address holds into the merchant's wallet on the simulated chain, as the worker's sweeper does on a live chain once deposits confirm (docs/deposit-addresses.md). The engine records it as a `sweep`: it pays no session. 409 for an amount-mode session, one not yet confirmed, or an address already swept.",
        params: IdParam('sessionId', 'ses'),
        response: { 200: SimulatedSweepSchema, ...errorResponses(...WRITE_ERRORS, 404, 409, 503) },
      },
    },
    async (request) => {
      const auth = authOf(request);
      if (auth.livemode) throw forbidden('sandbox endpoints need a test key (svc_test_… or svc_sk_…); live deposits are swept by the worker');
      if (!deps.sandbox) throw new UnavailableError('the sandbox is not running in this process');
      const { sessionId } = request.params as { sessionId: string };
      const swept = await deps.sandbox.sweep({ merchantId: auth.merchantId, sessionId, store: deps.store });
      return {
        sessionId,
        txHash: swept.txHash,
        from: swept.from,
        to: swept.to,
        amount: formatAmount(swept.amount, swept.decimals),
        amountBaseUnits: swept.amount.toString(),
        blockNumber: swept.blockNumber.toString(),
        livemode: false as const,
      };
    },
  );
}
