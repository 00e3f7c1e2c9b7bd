import { Type, type TSchema, type Static } from 'typebox';
import { PriceInputSchema as PriceInputSchemaRef, PriceQuoteViewSchema, PriceViewSchema } from '../pricing/schemas.ts';

export { PriceInputSchema, PriceQuoteViewSchema, PriceViewSchema } from '../pricing/schemas.ts';
import { MAX_PAYMENT_OPTIONS } from '../payments/options.ts';

/**
 * The request and response schemas of both interfaces. The same objects validate requests
 * (ajv, see validation.ts) and generate the OpenAPI document (@fastify/swagger), so the two
 * cannot drift. `x-error` is the message a client gets when a value breaks the schema.
 */

export * from './fieldSchemas.ts';
import {
  AmountSchema,
  ChainSchema,
  CurrencySchema,
  DescriptionSchema,
  ExpiresInSchema,
  LineItemsInputSchema,
  LineItemsViewSchema,
  MetadataSchema,
  AttributionSchema,
  UrlSchema,
  PayToWalletSchema,
} from './fieldSchemas.ts';

/** `{"error": "..."}`, spec §7. */
const ErrorSchema = Type.Object(
  { error: Type.String({ description: 'What is wrong, for people.' }) },
  { additionalProperties: false, description: 'Every error has this shape.' },
);

const DateTime = (description: string) => Type.String({ format: 'date-time', description });
const NullableDateTime = (description: string) => Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description });
const Nullable = (schema: TSchema, description: string) => Type.Union([schema, Type.Null()], { description });

/** A token accepted for a session. */
const TokenSchema = Type.Object({
  symbol: Type.String(),
  address: Type.String({ description: 'Token contract (EVM) or mint (solana).' }),
});

/** Every field of a session that both views share. */
const sessionFields = {
  id: Type.String({ description: 'Session identifier (`ses_…`); the same id works in both interfaces.' }),
  amount: Type.String({
    description:
      'The amount the merchant asked for, as a number: canonical decimal text, trailing zeros dropped (`"5.00"` is echoed as `"5"`, `"19.90"` as `"19.9"`). For people, show `displayAmount`.',
  }),
  displayAmount: Type.String({
    description: 'The requested amount for people: `amount` with at least the currency\'s display precision, two decimals (`"5.00"`, `"19.90"`, `"1.00005"`).',
  }),
  currency: CurrencySchema,
  chain: ChainSchema,
  checkoutUrl: Type.String({ format: 'uri', description: 'Hosted checkout page for the customer.' }),
  x402Url: Nullable(
    Type.String({ format: 'uri' }),
    "The session as an x402 resource (docs/agents.md): an x402 client (@x402/fetch) pays it with a signed EIP-3009 authorization (native USDC) or Permit2 permit (USDT, bridged USDC.e, bsc), settled by the gateway's gas-only relayer into the session's address; on solana with x402's SVM exact scheme (@x402/svm: the payer's partially signed TransferChecked, the gateway's fee payer paying the fee). null for a Permit2 session on a chain where Permit2 or x402's proxy is not deployed, for a sandbox solana session (its fake mint is on no cluster), or when this gateway cannot take x402 payments on the session's chain: live x402 needs the operator's gas-only relayer key for the chain (`SVC_<CHAIN>_RELAYER_KEY`; on solana the fee payer `SVC_SOLANA_RELAYER_KEY` with `SVC_SOLANA_RPC_URL`), sandbox x402 the sandbox running.",
  ),
  paymentAddress: Type.String({
    description: "Where to pay (Interface A name): the merchant wallet in `amount` mode, the session's own `depositAddress` in `address` mode.",
  }),
  merchantWallet: Type.String({ description: 'The merchant wallet, where the money ends (in `amount` mode also where to pay).' }),
  attribution: AttributionSchema,
  depositAddress: Nullable(
    Type.String(),
    "`address` mode: the session's own deposit address, where the payer sends any amount (it forwards only to `merchantWallet`); null in `amount` mode.",
  ),
  amountDue: Type.String({
    description:
      'The amount the payer must send, decimal text. `amount` mode: `amount` plus a unique offset below one cent that tells concurrent sessions on the same wallet apart, to be sent exactly. `address` mode: `amount` itself.',
  }),
  amountDueBaseUnits: Type.String({ description: '`amountDue` in the token base units (integer text).' }),
  amountReceived: Type.String({
    description:
      "Confirmed money, decimal text: the counted transfers that meet the chain's confirmation rule (the rule of `payment.confirmed`). Refunds are bounded by it.",
  }),
  amountPending: Type.String({
    description:
      'Money seen on chain but not confirmed yet, decimal text (e.g. a second payment to a confirmed session). Not refundable; it moves into `amountReceived` when it confirms, or vanishes if a reorg removes it.',
  }),
  decimals: Type.Integer({ description: 'Decimals of the token on this chain (6; 18 on bsc).' }),
  tokens: Type.Array(TokenSchema, { description: 'Token contracts or mints accepted for this session.' }),
  fee: Type.String({
    description:
      "The flat fee of this payment, decimal text (rounded half up to a base unit): the operator's rate (`SVC_FEE_BPS`, by default the spec's 1 %) when the session was created. Accounting only: the payment reaches the merchant's wallet whole.",
  }),
  feeBaseUnits: Type.String({ description: '`fee` in base units.' }),
  reference: Nullable(Type.String(), 'Solana Pay reference key to include in the transfer (solana only; null elsewhere).'),
  txHash: Nullable(Type.String(), 'Null until a transaction is seen.'),
  confirmations: Type.Integer({ description: 'Block confirmations of the payment so far.' }),
  requiredConfirmations: Type.Integer({ description: 'Confirmations needed before `confirmed` (EVM: the chain rule; solana: 32, finalized).' }),
  metadata: MetadataSchema,
  webhookUrl: Nullable(Type.String(), 'Per-session webhook address.'),
  successUrl: Nullable(Type.String(), 'Where the checkout page sends the customer after paying.'),
  paymentLinkId: Nullable(Type.String(), 'The payment link this session came from.'),
  description: Nullable(Type.String(), 'What is being bought, or null.'),
  lineItems: LineItemsViewSchema,
  cancelUrl: Nullable(Type.String(), 'Where the checkout page\'s "Cancel and return" link takes the customer, or null.'),
  price: PriceViewSchema,
  priceQuote: PriceQuoteViewSchema,
  receiptUrl: Type.String({
    format: 'uri',
    description: "The customer's printable receipt (`/checkout/{id}/receipt`), available once the payment is confirmed (404 before).",
  }),
  livemode: Type.Boolean({ description: 'false for sandbox sessions (test keys).' }),
  createdAt: DateTime('Creation time, ISO 8601 UTC.'),
  expiresAt: DateTime('Expiry time, ISO 8601 UTC.'),
  confirmedAt: NullableDateTime('When the payment was confirmed.'),
};

/** One accepted (chain, currency) pair. */
export const PaymentOptionSchema = Type.Object(
  { chain: ChainSchema, currency: CurrencySchema },
  { additionalProperties: false, description: 'A (chain, currency) pair the customer may pay with.' },
);

/** `paymentOptions` of a creation (src/payments/options.ts checks each pair). */
export const PaymentOptionsInputSchema = Type.Array(PaymentOptionSchema, {
  minItems: 1,
  maxItems: MAX_PAYMENT_OPTIONS,
  description: `The (chain, currency) pairs the customer may choose from, 1..${MAX_PAYMENT_OPTIONS}, no duplicates; each must be payable to this merchant in this mode (the checks of a single-pair session). Not with \`chain\`/\`currency\` (400). Neither given: every pair the merchant can receive in this mode. With several, the session waits for the customer's choice (POST /checkout/{id}/choice, the checkout page, or an x402 payment): until then \`chain\`, \`currency\`, \`amount\` and the payment fields are null and nothing is reserved. \`amount\` is that many units of whichever stablecoin is chosen; a fiat \`price\` is converted for the chosen pair at the choice (the session keeps \`price\` meanwhile, \`priceQuote\` null until then).`,
});

/** A session field that is null until the customer chooses among several payment options. */
function nullBeforeChoice<T extends TSchema>(schema: T) {
  return Type.Union([schema, Type.Null()], {
    description: `${(schema as { description?: string }).description ?? ''} null until the customer chooses a payment option.`.trim(),
  });
}

/** {@link sessionFields} with the fields a waiting session has not got made nullable, and the options and choice. */
const choosableSessionFields = {
  ...sessionFields,
  amount: nullBeforeChoice(sessionFields.amount),
  displayAmount: nullBeforeChoice(sessionFields.displayAmount),
  currency: nullBeforeChoice(sessionFields.currency),
  chain: nullBeforeChoice(sessionFields.chain),
  paymentAddress: nullBeforeChoice(sessionFields.paymentAddress),
  merchantWallet: nullBeforeChoice(sessionFields.merchantWallet),
  attribution: nullBeforeChoice(sessionFields.attribution),
  amountDue: nullBeforeChoice(sessionFields.amountDue),
  amountDueBaseUnits: nullBeforeChoice(sessionFields.amountDueBaseUnits),
  decimals: nullBeforeChoice(sessionFields.decimals),
  fee: nullBeforeChoice(sessionFields.fee),
  feeBaseUnits: nullBeforeChoice(sessionFields.feeBaseUnits),
  requiredConfirmations: nullBeforeChoice(sessionFields.requiredConfirmations),
  paymentOptions: Type.Array(PaymentOptionSchema, {
    description: 'The pairs the customer may pay with; a single-pair session lists its one pair.',
  }),
  choice: Type.Union([PaymentOptionSchema, Type.Null()], {
    description: "The pair being paid with: null while the customer has not chosen among several options, then fixed (the session's `chain` and `currency`).",
  }),
};

const STATUS_A = ['created', 'pending', 'confirming', 'confirmed', 'settled', 'expired', 'failed'];
const STATUS_B = ['pending', 'confirming', 'confirmed', 'settled', 'expired', 'failed'];

/** Interface A's payment session (spec §2.1) plus the payer's fields. */
export const SessionASchema = Type.Object(
  {
    ...choosableSessionFields,
    status: Type.Unsafe<string>({ type: 'string', enum: STATUS_A, description: 'Session state; `created` until a payment is seen.' }),
  },
  { additionalProperties: false, description: 'A payment session as Interface A shows it (spec §2.1), plus what a payer needs.' },
);

/** Interface B's payment (spec §2.2): the same session, `created` reported as `pending`. */
export const PaymentBSchema = Type.Object(
  {
    ...choosableSessionFields,
    status: Type.Unsafe<string>({ type: 'string', enum: STATUS_B, description: 'Payment state; a new payment is `pending` (the session state `created`).' }),
  },
  {
    additionalProperties: false,
    description: 'A payment as Interface B shows it (spec §2.2): the same session as Interface A, with `created` reported as `pending`.',
  },
);

/** POST /sessions (Interface A). */
export const CreateSessionBody = Type.Object(
  {
    amount: Type.Optional(AmountSchema),
    price: Type.Optional(PriceInputSchemaRef),
    currency: Type.Optional(CurrencySchema),
    chain: Type.Optional(ChainSchema),
    paymentOptions: Type.Optional(PaymentOptionsInputSchema),
    merchantWallet: Type.Optional(PayToWalletSchema),
    webhookUrl: Type.Optional(UrlSchema),
    successUrl: Type.Optional(UrlSchema),
    cancelUrl: Type.Optional(UrlSchema),
    description: Type.Optional(DescriptionSchema),
    lineItems: Type.Optional(LineItemsInputSchema),
    metadata: Type.Optional(MetadataSchema),
    expiresIn: Type.Optional(ExpiresInSchema),
    attribution: Type.Optional(AttributionSchema),
  },
  { additionalProperties: false },
);
export type CreateSessionBody = Static<typeof CreateSessionBody>;

/** POST /payments and POST /checkout/sessions (Interface B): the same fields. */
export const CreatePaymentBody = CreateSessionBody;

/** Standard responses every authenticated route can give. */
export function errorResponses(...statuses: number[]): Record<number, TSchema> {
  const descriptions: Record<number, string> = {
    400: 'Invalid request: bad JSON, wrong content type, unknown or missing fields, bad values.',
    401: 'Missing, unknown or revoked API key.',
    403: 'The key lacks the scope (read or write) this action needs.',
    404: 'No such resource for this merchant and mode.',
    409: 'Conflict: an idempotent request with this key is still running, or the state forbids the action.',
    410: 'Gone.',
    422: 'This Idempotency-Key was used with a different request; or a fiat `price` cannot be converted now (a stale price feed, no price, a token off its peg).',
    429: 'Rate limited; see Retry-After.',
    503: 'The database is unreachable; retry after Retry-After seconds.',
  };
  const rateLimitHeaders = {
    'Retry-After': { type: 'integer', description: 'Seconds until the limit resets.' },
    'RateLimit-Limit': { type: 'integer', description: 'Requests allowed per minute in this budget.' },
    'RateLimit-Remaining': { type: 'integer', description: 'Requests left in this window.' },
    'RateLimit-Reset': { type: 'integer', description: 'Seconds until the window resets.' },
  };
  return Object.fromEntries(
    statuses.map((status) => [
      status,
      { ...ErrorSchema, description: descriptions[status] ?? 'Error.', ...(status === 429 ? { headers: rateLimitHeaders } : {}) },
    ]),
  );
}

/** Errors any authenticated read can give. */
export const READ_ERRORS = [400, 401, 403, 404, 429, 503];
/** Errors any authenticated POST can give (idempotency adds 409 and 422). */
export const WRITE_ERRORS = [400, 401, 403, 409, 422, 429, 503];

/** A page of a list: newest first. */
export function ListSchema(item: TSchema, description: string) {
  return Type.Object(
    {
      data: Type.Array(item),
      hasMore: Type.Boolean({ description: 'More items follow: pass `nextCursor` as `startingAfter`.' }),
      nextCursor: Nullable(Type.String(), 'The last id of this page when `hasMore`, else null.'),
    },
    { additionalProperties: false, description },
  );
}

/** Paging query parameters shared by list endpoints. */
export const pagingQuery = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'Page size, 1..100, default 20.' })),
  startingAfter: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Cursor: the id of the last item of the previous page.' })),
};
