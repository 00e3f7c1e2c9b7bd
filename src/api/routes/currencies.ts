import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { ApiDeps } from '../deps.ts';
import { CHAIN_NAMES, liveChains } from '../../internal/config.ts';
import { CURRENCIES, currencyDecimals, loadChains } from '../../internal/chains.ts';
import { AMOUNT_LIMITS, requiredConfirmations } from '../../payments/terms.ts';
import { ChainSchema, CurrencySchema, READ_ERRORS, errorResponses } from '../schemas.ts';

const CurrencyEntrySchema = Type.Object(
  {
    currency: CurrencySchema,
    chain: ChainSchema,
    decimals: Type.Integer(),
    tokens: Type.Array(
      Type.Object({
        symbol: Type.String(),
        address: Type.String({ description: 'Token contract (EVM) or mint (solana).' }),
        decimals: Type.Integer(),
        variant: Type.Unsafe<string>({ type: 'string', enum: ['native', 'bridged'] }),
        acceptedByDefault: Type.Boolean({ description: 'Bridged variants are accepted only for merchants who opt in.' }),
      }),
    ),
    confirmations: Type.Object({
      required: Type.Integer({ description: 'Blocks on top of the payment before `confirmed` (solana: 32, the finalized depth).' }),
      rule: Type.String({ description: 'The chain rule: a block depth on EVM chains, a commitment level on solana.' }),
      why: Type.String(),
    }),
    minAmount: Type.String(),
    maxAmount: Type.String(),
    live: Type.Boolean({
      description:
        'Whether this gateway watches the chain for live payments (an RPC URL is configured). false: the chain is sandbox-only here; live sessions and payment links on it are refused (409). Test keys may use every chain.',
    }),
  },
  { additionalProperties: false },
);

/** `GET /currencies` (Interface B): every currency × chain offered, from chains/*.json, and whether the chain is live here. */
export function currencyRoutes(app: FastifyInstance, deps: ApiDeps): void {
  app.get(
    '/currencies',
    {
      schema: {
        tags: ['Interface B'],
        summary: 'List supported currencies and chains',
        querystring: Type.Object(
          { chain: Type.Optional(ChainSchema), currency: Type.Optional(CurrencySchema) },
          { additionalProperties: false, description: 'Optional filters; any other parameter is a 400, so a misspelt filter is never silently ignored.' },
        ),
        response: { 200: Type.Object({ data: Type.Array(CurrencyEntrySchema) }, { additionalProperties: false }), ...errorResponses(...READ_ERRORS) },
      },
    },
    async (request) => {
      const filter = request.query as { chain?: string; currency?: string };
      const chains = loadChains();
      const live = new Set(liveChains(deps.config));
      const data = [];
      for (const currency of CURRENCIES.filter((c) => filter.currency === undefined || c === filter.currency)) {
        for (const name of CHAIN_NAMES.filter((c) => filter.chain === undefined || c === filter.chain)) {
          const chain = chains[name];
          const decimals = currencyDecimals(chain, currency);
          if (decimals === undefined) continue;
          data.push({
            currency,
            chain: name,
            decimals,
            tokens: chain.tokens
              .filter((token) => token.currency === currency)
              .map((token) => ({
                symbol: token.symbol,
                address: token.address,
                decimals: token.decimals,
                variant: token.variant,
                acceptedByDefault: token.acceptedByDefault,
              })),
            confirmations: { required: requiredConfirmations(chain), rule: String(chain.confirmations.confirmed), why: chain.confirmations.why },
            minAmount: AMOUNT_LIMITS.min,
            maxAmount: AMOUNT_LIMITS.max,
            live: live.has(name),
          });
        }
      }
      return { data };
    },
  );
}
