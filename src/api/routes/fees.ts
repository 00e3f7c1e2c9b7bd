import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { ApiDeps } from '../deps.ts';
import { authOf } from '../auth.ts';
import { merchantFees } from '../../payments/sessions.ts';
import { formatAmount } from '../../internal/money.ts';
import { ChainSchema, CurrencySchema, READ_ERRORS, errorResponses } from '../schemas.ts';

const FeesSchema = Type.Object(
  {
    object: Type.Literal('fee_summary'),
    rate: Type.String({
      description:
        "The flat fee rate new sessions get, as a decimal fraction (`0.01` = 1 %, the spec's, the default): the operator's `SVC_FEE_BPS`. Each payment's fee was computed at its creation, in base units, rounded half up.",
    }),
    livemode: Type.Boolean(),
    data: Type.Array(
      Type.Object(
        {
          chain: ChainSchema,
          currency: CurrencySchema,
          payments: Type.Integer({ description: 'Confirmed and settled payments counted.' }),
          fee: Type.String({ description: 'Sum of their fees, decimal text.' }),
          feeBaseUnits: Type.String({ description: 'The same sum in base units.' }),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

/**
 * `GET /fees`: the flat fee summed per chain and currency over the merchant's paid payments (of the
 * key's mode). In a self-hosted gateway the fee is the operator's accounting of what merchants owe
 * it (README, "The fee"): nothing is withheld from a payment, which goes whole to the merchant's wallet.
 */
export function feeRoutes(app: FastifyInstance, deps: ApiDeps): void {
  app.get(
    '/fees',
    {
      schema: {
        tags: ['Interface B'],
        summary: 'Fees owed, per chain and currency',
        description:
          "The flat fee (the operator's `SVC_FEE_BPS`, by default the spec's 1 %) of every confirmed or settled payment, summed per chain and currency. Each payment shows its own fee as `fee`, fixed when it was created. Nothing is withheld: payments reach the merchant's wallet whole; the fee is what the operator of this gateway bills, if anything.",
        response: { 200: FeesSchema, ...errorResponses(...READ_ERRORS) },
      },
    },
    async (request) => {
      const auth = authOf(request);
      const rows = await merchantFees(deps.store, { merchantId: auth.merchantId, livemode: auth.livemode });
      return {
        object: 'fee_summary' as const,
        rate: formatAmount(BigInt(deps.config.feeBps), 4),
        livemode: auth.livemode,
        data: rows.map((row) => ({
          chain: row.chain,
          currency: row.currency,
          payments: row.payments,
          fee: formatAmount(row.fee, row.decimals),
          feeBaseUnits: row.fee.toString(),
        })),
      };
    },
  );
}
