import { Type } from 'typebox';
import { CHAIN_NAMES, type ChainName } from '../internal/config.ts';
import { CURRENCIES, type Currency } from '../internal/chains.ts';
import { AMOUNT_LIMITS, EXPIRES_IN } from '../payments/terms.ts';
import { LINE_ITEM_LIMITS, MAX_LINE_ITEMS } from '../payments/purchase.ts';

/**
 * The schemas of the single fields requests carry (chain, currency, amount, URLs, purchase
 * details, metadata, lifetimes, wallets, path ids), shared by every route's body and by
 * schemas.ts's objects. `x-error` is the message a client gets when a value breaks the schema.
 */

/** Metadata limits, as Stripe's: 50 keys, keys up to 40 characters, values up to 500. */
const METADATA_LIMITS = { keys: 50, keyLength: 40, valueLength: 500 } as const;

/** One of the six chains of the spec. */
export const ChainSchema = Type.Unsafe<ChainName>({
  type: 'string',
  enum: [...CHAIN_NAMES],
  description: 'The chain to pay on.',
});
/** USDT or USDC. */
export const CurrencySchema = Type.Unsafe<Currency>({ type: 'string', enum: [...CURRENCIES], description: 'The stablecoin.' });

/** An amount as decimal text; decimals and bounds are checked per chain in createSession. */
export const AmountSchema = Type.String({
  minLength: 1,
  maxLength: 80,
  pattern: '^(0|[1-9][0-9]*)(\\.[0-9]+)?$',
  description: `Amount in token units as decimal text ("12.50"): positive, no sign or exponent, no more decimals than the token has on the chain (6; 18 on bsc), from ${AMOUNT_LIMITS.min} to ${AMOUNT_LIMITS.max}. JSON numbers are refused (they lose precision).`,
  'x-error': 'must be decimal text such as "12.50" (digits, one optional point, no sign or exponent)',
  examples: ['25.00'],
});

/** webhookUrl / successUrl: absolute http(s). */
export const UrlSchema = Type.String({
  maxLength: 2048,
  format: 'uri',
  pattern: '^[hH][tT][tT][pP][sS]?://[^/?#\\s]+',
  description: 'An absolute http(s) URL, at most 2048 characters.',
  'x-error': 'must be an absolute http or https URL',
});

/** `description` of a session or link: what is being bought, shown to the customer. */
export const DescriptionSchema = Type.String({
  minLength: 1,
  maxLength: LINE_ITEM_LIMITS.descriptionLength,
  description: `What is being bought, shown on the checkout page and the receipt (1..${LINE_ITEM_LIMITS.descriptionLength} characters).`,
});

/** One line item of a creation. */
const LineItemInputSchema = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: LINE_ITEM_LIMITS.nameLength, description: `Item name (1..${LINE_ITEM_LIMITS.nameLength} characters).` }),
    quantity: Type.Integer({ minimum: 1, maximum: LINE_ITEM_LIMITS.maxQuantity, description: `How many, 1..${LINE_ITEM_LIMITS.maxQuantity}.` }),
    unitAmount: Type.String({
      minLength: 1,
      maxLength: 80,
      pattern: '^(0|[1-9][0-9]*)(\\.[0-9]+)?$',
      description: 'Price of one, in token units as decimal text ("12.50"), no more decimals than the token has on the chain; may be "0".',
      'x-error': 'must be decimal text such as "12.50" (digits, one optional point, no sign or exponent)',
    }),
  },
  { additionalProperties: false },
);

/** `lineItems` of a creation: their total must equal `amount` (src/payments/purchase.ts). */
export const LineItemsInputSchema = Type.Array(LineItemInputSchema, {
  minItems: 1,
  maxItems: MAX_LINE_ITEMS,
  description: `Optional itemisation shown on the checkout page, the receipt, the API and webhooks: 1..${MAX_LINE_ITEMS} items. Not informational: the items' total (quantity × unitAmount, summed) must equal \`amount\` exactly, or the request is a 400; taxes, shipping or fees are items of their own.`,
});

/** Line items as views show them. */
export const LineItemsViewSchema = Type.Union(
  [
    Type.Array(
      Type.Object(
        {
          name: Type.String(),
          quantity: Type.Integer(),
          unitAmount: Type.String({ description: 'Price of one, decimal text.' }),
          amount: Type.String({ description: 'quantity × unitAmount, decimal text.' }),
        },
        { additionalProperties: false },
      ),
    ),
    Type.Null(),
  ],
  { description: 'The line items (their total is `amount`), or null.' },
);

/** Merchant metadata: string to string, Stripe's limits. */
export const MetadataSchema = Type.Unsafe<Record<string, string>>({
  type: 'object',
  maxProperties: METADATA_LIMITS.keys,
  propertyNames: { minLength: 1, maxLength: METADATA_LIMITS.keyLength },
  additionalProperties: { type: 'string', maxLength: METADATA_LIMITS.valueLength },
  description: `Your own string key/value pairs, returned as given: at most ${METADATA_LIMITS.keys} keys, keys 1..${METADATA_LIMITS.keyLength} characters, values strings of at most ${METADATA_LIMITS.valueLength} characters.`,
});

/** Session lifetime in seconds. */
export const ExpiresInSchema = Type.Integer({
  minimum: EXPIRES_IN.min,
  maximum: EXPIRES_IN.max,
  description: `Session lifetime in seconds, ${EXPIRES_IN.min} to ${EXPIRES_IN.max} (7 days); default ${EXPIRES_IN.default}.`,
});

/** How payments are told to be the session's (src/payments/attribution.ts). */
export const AttributionSchema = Type.Unsafe<'amount' | 'address'>({
  type: 'string',
  enum: ['amount', 'address'],
  description:
    "How a payment is attributed to this session. `amount`: the payer sends a unique due amount to the merchant's shared wallet. `address` (EVM chains only): the payer sends any amount to the session's own deposit address, which only ever forwards to the merchant's wallet; the due amount is the plain amount. Omitted: the merchant's default (`svc merchants update --attribution`, dashboard Settings). Solana sessions always use their Solana Pay reference: `address` there is a 400.",
  'x-error': 'must be "amount" or "address"',
});

/** A receiving wallet; the chain-specific check happens in checkSessionTerms (payments/terms.ts). */
export const WalletAddressSchema = Type.String({
  minLength: 1,
  maxLength: 100,
  description:
    'Receiving wallet: 0x-prefixed 40 hex digits on EVM chains (any case; mixed case must be a valid EIP-55 checksum), base58 of a 32-byte key on solana.',
});

/**
 * `merchantWallet` of a creation: optional in live mode when the chain has a default wallet, or
 * exactly one verified wallet (spec §4.2; the rule is resolvePayTo's, src/payments/terms.ts).
 */
export const PayToWalletSchema = Type.String({
  minLength: 1,
  maxLength: 100,
  description:
    "Receiving wallet: 0x-prefixed 40 hex digits on EVM chains (any case; mixed case must be a valid EIP-55 checksum), base58 of a 32-byte key on solana. Optional: without it a live payment pays the default wallet of the chain, or, with no default, the chain's only verified wallet; several verified wallets and no default are a 400.",
});

/** What each id prefix names, for the 404 of an id that names nothing. */
const ID_NOUNS: Record<string, string> = {
  ses: 'payment session',
  plink: 'payment link',
  rfd: 'refund',
  trf: 'transfer',
  evt: 'event',
  we: 'webhook endpoint',
};

/**
 * A path parameter holding a resource id (letters, digits, underscores). An id of another shape
 * names no resource: 404 like an unknown one (spec §7), not 400; `x-not-found` names what was
 * looked for (see registerValidation).
 */
export const IdParam = (name: string, prefix: string) =>
  Type.Object(
    {
      [name]: Type.String({
        minLength: 1,
        maxLength: 64,
        pattern: '^[A-Za-z0-9_]+$',
        description: `Identifier (\`${prefix}_…\`). Any id that names nothing of the caller's, whatever its shape, is a 404.`,
        'x-not-found': ID_NOUNS[prefix] ?? 'resource',
      }),
    },
    { additionalProperties: false },
  );
