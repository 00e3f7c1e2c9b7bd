import { Type, type TSchema } from 'typebox';
import { CHAIN_NAMES, type ChainName } from '../internal/config.ts';
import { FEED_PAIRS, FIAT_CURRENCIES, type FiatCurrency } from '../internal/chains.ts';

/** The schemas of fiat prices (issue 26; src/pricing): the creation's `price`, the views' `price` and `priceQuote`. */

const Nullable = <T extends TSchema>(schema: T, description: string) => Type.Union([schema, Type.Null()], { description });
const ChainSchema = Type.Unsafe<ChainName>({ type: 'string', enum: [...CHAIN_NAMES] });

/** `price` of a creation (issue 26): a fiat price instead of a token `amount`. */
export const PriceInputSchema = Type.Object(
  {
    amount: Type.String({
      minLength: 1,
      maxLength: 40,
      description: 'Decimal text ("49.00"): positive, at most the currency\'s minor-unit decimals (JPY 0, the others 2).',
    }),
    currency: Type.Unsafe<FiatCurrency>({ type: 'string', enum: [...FIAT_CURRENCIES], description: 'ISO 4217 code of the fiat currency.' }),
  },
  {
    additionalProperties: false,
    description:
      'A price in a fiat currency instead of `amount` (give exactly one of the two). The token amount is fixed from Chainlink price feeds when the pair is known: at creation for a single-pair session, at the customer\'s choice for a session with several `paymentOptions`, at each visit (or each visit\'s choice) for a payment link; the sandbox uses fixed rates. 422 when a feed is stale, answers no price, or the token is off its peg (docs/checkout.md, "Prices in your currency").',
  },
);

/** A session's or link's `price` as shown: as given, or null. */
export const PriceViewSchema = Nullable(
  Type.Object(
    { amount: Type.String({ description: 'Decimal text, as given.' }), currency: Type.Unsafe<FiatCurrency>({ type: 'string', enum: [...FIAT_CURRENCIES] }) },
    { additionalProperties: false },
  ),
  'The fiat price the token amount was converted from, or null when the merchant gave a token amount.',
);

/** How a fiat price became the token amount. */
export const PriceQuoteViewSchema = Nullable(
  Type.Object(
    {
      source: Type.Unsafe<'chainlink' | 'sandbox'>({
        type: 'string',
        enum: ['chainlink', 'sandbox'],
        description: '`chainlink` (live) or `sandbox` (fixed rates).',
      }),
      rate: Type.String({
        description:
          'Token units per one unit of the fiat currency, decimal text rounded to 8 places (the amount is computed from the exact answers and rounded up to a base unit).',
      }),
      feeds: Type.Array(
        Type.Object(
          {
            pair: Type.Unsafe<string>({ type: 'string', enum: [...FEED_PAIRS], description: "The feed's pair, `EUR/USD` or `USDC/USD`." }),
            chain: ChainSchema,
            address: Type.String({ description: 'The Chainlink feed (proxy) contract.' }),
            roundId: Type.String({ description: 'The round read, integer text.' }),
            answer: Type.String({ description: "The round's answer, integer text at `decimals`." }),
            decimals: Type.Integer(),
            updatedAt: Type.String({ format: 'date-time', description: 'When the round was updated on chain.' }),
          },
          { additionalProperties: false },
        ),
        { description: "The feeds read: the fiat's /USD (none for USD), then the token's /USD; empty in the sandbox." },
      ),
      quotedAt: Type.String({ format: 'date-time', description: 'When the price was converted.' }),
    },
    { additionalProperties: false },
  ),
  "How `price` became `amount`, or null without a price (and while a priced session waits for its customer's choice of pair).",
);
