import { PriceQuoteViewSchema, PriceViewSchema } from '../pricing/schemas.ts';
import { Type, type Static, type TSchema } from 'typebox';
import { CHAIN_NAMES } from '../internal/config.ts';
import { CURRENCIES } from '../internal/chains.ts';
import { CHECKOUT_VIEWS } from './view.ts';

/**
 * The JSON the checkout serves to agents and to its own page script. These schemas are the
 * routes' response schemas, so @fastify/swagger puts them in the OpenAPI document and the test
 * validates real responses against that document.
 */

const Nullable = <T extends TSchema>(schema: T, description: string) => Type.Union([schema, Type.Null()], { description });
const Enum = (values: readonly string[], description: string) => Type.Unsafe<string>({ type: 'string', enum: [...values], description });
const Decimal = (description: string) => Type.String({ pattern: '^(0|[1-9][0-9]*)(\\.[0-9]+)?$', description });
const BaseUnits = (description: string) => Type.String({ pattern: '^(0|[1-9][0-9]*)$', description });

const STATUS = ['created', 'pending', 'confirming', 'confirmed', 'settled', 'expired', 'failed'];

export const InstructionTokenSchema = Type.Object(
  {
    symbol: Type.String({ description: 'Token symbol as the chain config names it (e.g. USDC, USDC.e).' }),
    address: Type.String({ description: 'ERC-20 contract address (EIP-55) on EVM chains; SPL mint on solana.' }),
    decimals: Type.Integer({ description: 'Token decimals on this chain (6; 18 on bsc).' }),
    standard: Enum(['erc20', 'spl'], 'Token standard: `erc20` on EVM chains, `spl` on solana.'),
    tokenProgram: Nullable(Type.String(), 'SPL token program of the mint (solana); null on EVM chains.'),
    paymentUri: Nullable(
      Type.String(),
      "Wallet URI paying the remaining amount in this token: EIP-681 `ethereum:<token>@<chainId>/transfer?address=<recipient>&uint256=<base units>` on EVM chains, a Solana Pay transfer request on solana. Sandbox sessions: the test network's chain id on EVM chains, and on solana a fake `spl-token` mint that exists on no cluster, so no wallet can pay it with real money. Null when nothing should be paid now.",
    ),
  },
  { additionalProperties: false },
);
export type InstructionToken = Static<typeof InstructionTokenSchema>;

const statusFields = {
  id: Type.String({ description: 'Session id (`ses_…`).' }),
  status: Enum(STATUS, 'Session state (Interface A names).'),
  view: Enum(
    CHECKOUT_VIEWS,
    'What the page shows: awaiting, detected (confirming), underpaid, paid, expired, failed. Unlike `status` it also reads the clock: an unpaid session past `expiresAt` is `expired` even before the expiry sweep runs.',
  ),
  amountReceived: Decimal("Confirmed money: the counted transfers that meet the chain's confirmation rule, decimal text. A refund request is for this."),
  amountReceivedBaseUnits: BaseUnits('`amountReceived` in base units.'),
  amountPending: Decimal('Seen on chain but not confirmed yet, decimal text; it moves into `amountReceived` when it confirms.'),
  amountPendingBaseUnits: BaseUnits('`amountPending` in base units.'),
  amountRemaining: Decimal('What is left to pay (`amountDue` less `amountReceived` and `amountPending`, never negative), decimal text.'),
  amountRemainingBaseUnits: BaseUnits('`amountRemaining` in base units.'),
  paymentUri: Nullable(Type.String(), 'Wallet URI for the remaining amount in the first accepted token; null when nothing should be paid now.'),
  payable: Type.Boolean({ description: 'true while a payment of `amountRemaining` is expected (before expiry, not yet paid in full).' }),
  txHash: Nullable(Type.String(), 'Transaction of the (first) matched payment; null until one is seen.'),
  confirmations: Type.Integer({ description: 'Block confirmations of the payment so far.' }),
  requiredConfirmations: Type.Integer({ description: 'Confirmations needed before the payment is confirmed.' }),
  expiresAt: Type.String({ format: 'date-time', description: 'Expiry, ISO 8601 UTC.' }),
  serverTime: Type.String({ format: 'date-time', description: 'The server clock when this was read, so a client can correct its own for the countdown.' }),
  secondsToExpiry: Type.Integer({ minimum: 0, description: 'Whole seconds from `serverTime` to `expiresAt`, 0 once expired.' }),
  confirmedAt: Nullable(Type.String({ format: 'date-time' }), 'When the payment was confirmed.'),
  successUrl: Nullable(Type.String(), "The merchant's page the checkout sends the payer to after payment."),
  refundUrl: Nullable(Type.String(), 'POST a refund request here (see POST /checkout/{sessionId}/refund); null unless money arrived and the session is over.'),
};

/** GET /checkout/{sessionId} with `Accept: application/json`. */
export const PaymentInstructionsSchema = Type.Object(
  {
    object: Type.Literal('payment_instructions'),
    ...statusFields,
    livemode: Type.Boolean({ description: 'false for sandbox sessions: pay on the sandbox chain, not a real one.' }),
    merchant: Type.Object(
      {
        name: Type.String({ description: "Who is being paid: the merchant's display name." }),
        logoUrl: Nullable(Type.String({ format: 'uri' }), "The merchant's logo (PNG, JPEG or WebP) on this gateway, or null."),
        accentColor: Nullable(Type.String({ pattern: '^#[0-9a-f]{6}$' }), "The merchant's accent colour `#rrggbb`, or null."),
        supportEmail: Nullable(Type.String(), 'Where the customer can write to the merchant, or null.'),
        supportUrl: Nullable(Type.String({ format: 'uri' }), "The merchant's support page (https on live sessions), or null."),
      },
      { additionalProperties: false },
    ),
    price: PriceViewSchema,
    priceQuote: PriceQuoteViewSchema,
    description: Nullable(Type.String(), 'What is being bought, or null.'),
    lineItems: Nullable(
      Type.Array(
        Type.Object(
          {
            name: Type.String(),
            quantity: Type.Integer({ minimum: 1 }),
            unitAmount: Decimal('Price of one, decimal text.'),
            amount: Decimal('quantity × unitAmount, decimal text.'),
          },
          { additionalProperties: false },
        ),
      ),
      'The items bought; their total is `amount`. Null when the merchant gave none.',
    ),
    cancelUrl: Nullable(Type.String(), "The merchant's page to go back to without paying, or null."),
    receiptUrl: Type.String({ format: 'uri', description: 'The printable receipt: a page once the payment is confirmed (`view` paid), 404 before.' }),
    chain: Type.Unsafe<string>({ type: 'string', enum: [...CHAIN_NAMES], description: 'Chain to pay on.' }),
    chainName: Type.String({ description: 'Display name of the chain.' }),
    chainKind: Enum(['evm', 'solana'], 'evm or solana.'),
    chainId: Type.Union([Type.Integer(), Type.String()], {
      description:
        'EIP-155 chain id on EVM chains (137, 8453, 56, 42161, 10); the cluster (`mainnet-beta`) on solana. Sandbox sessions name the public test network instead (80002, 84532, 97, 421614, 11155420; `devnet`), so that their instructions cannot move real money.',
    }),
    currency: Type.Unsafe<string>({ type: 'string', enum: [...CURRENCIES], description: 'USDT or USDC.' }),
    decimals: Type.Integer({ description: 'Decimals of the amounts (6; 18 on bsc).' }),
    token: InstructionTokenSchema,
    acceptedTokens: Type.Array(InstructionTokenSchema, { description: 'Every token accepted for this session; `token` is the first. Pay in exactly one.' }),
    recipient: Type.String({
      description:
        "Where to pay: the merchant's wallet in `amount` mode (the owner wallet on solana; wallets derive the token account), the session's own deposit address in `address` mode.",
    }),
    attribution: Enum(
      ['amount', 'address'],
      "`amount`: send exactly `amountDue` (its last digits identify this payment) to the shared `recipient`. `address`: `recipient` is this payment's own address; any amount, in one or several transfers, from any wallet or exchange, counts.",
    ),
    reference: Nullable(Type.String(), 'Solana Pay reference key to include in the transfer as a read-only account (solana only).'),
    amount: Decimal('What the merchant asked for, decimal text.'),
    amountBaseUnits: BaseUnits('`amount` in base units.'),
    amountDue: Decimal(
      'The amount to send, decimal text. `amount` mode: `amount` plus an offset below one cent that identifies this session; send exactly this. `address` mode: `amount` itself.',
    ),
    amountDueBaseUnits: BaseUnits('`amountDue` in base units: the ERC-20 `transfer` value.'),
    createdAt: Type.String({ format: 'date-time', description: 'Creation time, ISO 8601 UTC.' }),
    checkoutUrl: Type.String({ format: 'uri', description: 'This page.' }),
    statusUrl: Type.String({ format: 'uri', description: 'GET: the live part of these instructions as JSON (poll every few seconds).' }),
    eventsUrl: Type.String({
      format: 'uri',
      description: 'GET: server-sent events, one `status` event with the same JSON as `statusUrl` whenever it changes.',
    }),
    x402Url: Nullable(
      Type.String({ format: 'uri' }),
      "This session as an x402 resource (docs/agents.md): a standard x402 client (@x402/fetch) pays it with a signed EIP-3009 authorization (native USDC) or Permit2 permit (USDT, bridged USDC.e, bsc), or on solana with x402's SVM exact scheme (@x402/svm: the payer's partially signed TransferChecked, the gateway's fee payer paying the fee). null for a Permit2 session on a chain where Permit2 or x402's proxy is not deployed, for a sandbox solana session (its fake mint is on no cluster), or when this gateway cannot take x402 payments on the session's chain: live x402 needs the operator's gas-only relayer key for the chain (`SVC_<CHAIN>_RELAYER_KEY`; on solana the fee payer `SVC_SOLANA_RELAYER_KEY` with `SVC_SOLANA_RPC_URL`), sandbox x402 the sandbox running.",
    ),
    proofUrl: Nullable(
      Type.String({ format: 'uri' }),
      'POST `{ "txHash": "…", "signature": "…" }` here after paying from your own wallet, signed by the wallet that sent the transfer over `proofMessage` with the hash filled in: the gateway looks the transaction up at once and binds it to this session (see POST /checkout/{sessionId}/transactions). Null for sandbox sessions and address-mode sessions (a deposit address needs no proof).',
    ),
    proofMessage: Nullable(
      Type.String(),
      'The exact text the sending wallet signs to prove a payment, with `{txHash}` standing for the transaction as the gateway stores it (lowercase hex on EVM chains). Null where `proofUrl` is null.',
    ),
  },
  {
    additionalProperties: false,
    description:
      'Machine-readable payment instructions: pay `amountRemainingBaseUnits` of `token.address` on `chainId` to `recipient` (or open `paymentUri`) before `expiresAt`, then watch `statusUrl`.',
  },
);
export type PaymentInstructions = Static<typeof PaymentInstructionsSchema>;

/** GET /checkout/{sessionId}/status and each `status` event of the live feed. */
export const PaymentStatusSchema = Type.Object(
  { object: Type.Literal('payment_status'), ...statusFields },
  { additionalProperties: false, description: 'The live part of the payment instructions.' },
);
export type PaymentStatus = Static<typeof PaymentStatusSchema>;

/** POST /checkout/{sessionId}/refund. */
export const RefundRequestBody = Type.Object(
  {
    destination: Type.String({ minLength: 1, maxLength: 100, description: "Where the refund should go: an address on the session's chain." }),
    reason: Type.Optional(Type.String({ maxLength: 500, description: 'Why the payer asks for a refund (shown to the merchant).' })),
    email: Type.Optional(Type.String({ maxLength: 254, format: 'email', description: 'Where the merchant can reach the payer (optional).' })),
  },
  { additionalProperties: false },
);
export type RefundRequestBody = Static<typeof RefundRequestBody>;

export const RefundRequestResponse = Type.Object(
  {
    object: Type.Literal('refund_request'),
    id: Type.String({ description: 'Refund id (`rfd_…`), the same id the merchant sees in GET /refunds and the `refund.requested` event.' }),
    sessionId: Type.String(),
    status: Type.Literal('requested'),
    amount: Decimal('Amount asked back: all that is left to refund of what the session received, decimal text.'),
    amountBaseUnits: BaseUnits('`amount` in base units.'),
    currency: Type.Unsafe<string>({ type: 'string', enum: [...CURRENCIES] }),
    chain: Type.Unsafe<string>({ type: 'string', enum: [...CHAIN_NAMES] }),
    destination: Type.String({ description: 'Canonical form of the destination address.' }),
    createdAt: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false, description: 'The refund request as recorded; the merchant decides and sends the refund from its own wallet.' },
);

/** POST /checkout/{sessionId}/transactions. */
export const TransactionProofBody = Type.Object(
  {
    txHash: Type.String({
      minLength: 1,
      maxLength: 100,
      description: "The payment's transaction: `0x` and 64 hex digits on EVM chains, the base58 transaction signature on solana.",
    }),
    signature: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 4200,
        description:
          "The transfer's sender's signature of the proof message (docs/checkout.md, \"Proving a payment\"): EIP-191 `personal_sign` on EVM chains (an ERC-1271 contract wallet's signature is checked on chain), ed25519 `signMessage` bytes in base58 or base64 on solana. Required: without it the answer is a 400 that quotes the exact message to sign.",
      }),
    ),
  },
  { additionalProperties: false },
);
export type TransactionProofBody = Static<typeof TransactionProofBody>;

export const TransactionProofResponse = Type.Object(
  {
    object: Type.Literal('transaction_proof'),
    sessionId: Type.String(),
    chain: Type.Unsafe<string>({ type: 'string', enum: [...CHAIN_NAMES] }),
    txHash: Type.String({ description: 'The transaction as the gateway stores it (lowercase hex on EVM chains).' }),
    bound: Type.Boolean({
      description:
        "true: the transaction's transfers count for this session now (200). false: the transaction is claimed for this session and its transfers will count as soon as the gateway's chain watcher stores them, normally within seconds (202).",
    }),
    message: Type.String({ description: 'What happened, in words.' }),
    payment: PaymentStatusSchema,
  },
  { additionalProperties: false, description: 'A transaction bound to (or claimed for) the session, with the session as it is now.' },
);
export type TransactionProofResponse = Static<typeof TransactionProofResponse>;

export const CheckoutErrorSchema = Type.Object({ error: Type.String() }, { additionalProperties: false });
