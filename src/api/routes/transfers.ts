import type { FastifyInstance } from 'fastify';
import { Type, type Static } from 'typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ApiDeps } from '../deps.ts';
import { auditApiChange } from '../audit.ts';
import { authOf } from '../auth.ts';
import { attributeTransfer, listUnmatchedTransfers, parseTransferId, transferPublicId, type TransferRow } from '../../engine/index.ts';
import { loadChains } from '../../internal/chains.ts';
import { formatAmount } from '../../internal/money.ts';
import { badRequest, notFound } from '../../internal/errors.ts';
import { ChainSchema, IdParam, ListSchema, READ_ERRORS, WRITE_ERRORS, errorResponses, pagingQuery } from '../schemas.ts';

/** Default page size, as the other list endpoints. */
const DEFAULT_PAGE_SIZE = 20;

const Nullable = (schema: ReturnType<typeof Type.String>, description: string) => Type.Union([schema, Type.Null()], { description });

/** A transfer as `GET /transfers/unmatched` and the attribution response show it. */
export const TransferSchema = Type.Object(
  {
    id: Type.String({ description: 'Transfer identifier (`trf_…`).' }),
    chain: ChainSchema,
    currency: Nullable(Type.String(), 'USDT or USDC, from the token contract or mint; null for a token no chain config lists.'),
    tokenAddress: Type.String({ description: 'Token contract (EVM) or mint (solana), canonical form.' }),
    amount: Type.String({ description: 'Amount in token units, decimal text.' }),
    amountBaseUnits: Type.String({ description: '`amount` in base units (integer text).' }),
    txHash: Type.String({ description: 'Transaction hash (EVM) or signature (solana).' }),
    logIndex: Type.Integer({ description: 'Log index (EVM) or the index that makes the transfer unique in its transaction (solana).' }),
    blockNumber: Type.String({ description: 'Block number (EVM) or slot (solana), integer text.' }),
    blockTime: Nullable(Type.String({ format: 'date-time' }), 'Block time, ISO 8601 UTC.'),
    from: Nullable(Type.String(), 'Sender address when known.'),
    to: Type.String({ description: "The receiving wallet (one of yours), or one of your sessions' deposit addresses." }),
    status: Type.Unsafe<string>({ type: 'string', enum: ['unmatched', 'matched'], description: '`unmatched` until attributed to a session.' }),
    sessionId: Nullable(Type.String(), 'The session this transfer pays, or null.'),
    matchMethod: Nullable(
      Type.String(),
      "`address` (paid to the session's deposit address), `reference` (Solana Pay), `amount` (the unique due amount), `claim` (the transaction was bound to the session explicitly: a payer's proof by hash, or the gateway's own x402 settlement) or `manual`.",
    ),
    observedAt: Type.String({ format: 'date-time', description: 'When the gateway saw the transfer.' }),
    livemode: Type.Boolean(),
  },
  { additionalProperties: false, description: 'A token transfer into one of your wallets, as the gateway observed it.' },
);

const ListUnmatchedQuery = Type.Object({ ...pagingQuery, chain: Type.Optional(ChainSchema) }, { additionalProperties: false });

export const AttributeBody = Type.Object(
  { sessionId: Type.String({ minLength: 1, maxLength: 64, description: 'The session (`ses_…`) this transfer pays.' }) },
  { additionalProperties: false },
);

const AttributionResponse = Type.Object(
  {
    transfer: TransferSchema,
    session: Type.Object(
      { id: Type.String(), status: Type.String({ description: 'The session state right after attribution (Interface A names).' }) },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);

/** A stored transfer as the API shows it. */
export function transferView(row: TransferRow): Static<typeof TransferSchema> {
  const token = loadChains()[row.chain]?.tokens.find((t) => t.address === row.token_address);
  const amount = BigInt(row.amount);
  return {
    id: transferPublicId(row.id),
    chain: row.chain,
    currency: token?.currency ?? null,
    tokenAddress: row.token_address,
    amount: token ? formatAmount(amount, token.decimals) : amount.toString(),
    amountBaseUnits: amount.toString(),
    txHash: row.tx_hash,
    logIndex: row.log_index,
    blockNumber: row.block_number.toString(),
    blockTime: row.block_time ? row.block_time.toISOString() : null,
    from: row.from_address,
    to: row.to_address,
    status: row.session_id ? 'matched' : 'unmatched',
    sessionId: row.session_id,
    matchMethod: row.match_method,
    observedAt: row.observed_at.toISOString(),
    livemode: row.livemode,
  };
}

function transferIdOrNotFound(text: string): bigint {
  const id = parseTransferId(text);
  if (id === undefined) throw notFound(`transfer ${text} not found`);
  return id;
}

/**
 * Transfers that matched no session (Interface B style): `GET /transfers/unmatched` lists them,
 * `POST /transfers/:id/attribution` attributes one to a session by hand.
 */
export function transferRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const typed = app.withTypeProvider<TypeBoxTypeProvider>();
  typed.get(
    '/transfers/unmatched',
    {
      schema: {
        tags: ['Interface B'],
        summary: 'List unmatched transfers',
        description:
          "Transfers into your wallets that the engine could not attribute to a session: no Solana Pay reference, no unique due amount, no single session waiting on that wallet and token, or paid outside every session's window (creation to expiry plus the monitoring window). Newest first; pass `nextCursor` as `startingAfter`. Attribute one with `POST /transfers/{id}/attribution`.",
        querystring: ListUnmatchedQuery,
        response: { 200: ListSchema(TransferSchema, 'A page of unmatched transfers, newest first.'), ...errorResponses(...READ_ERRORS) },
      },
    },
    async (request) => {
      const auth = authOf(request);
      const limit = request.query.limit ?? DEFAULT_PAGE_SIZE;
      let startingAfter: bigint | undefined;
      if (request.query.startingAfter !== undefined) {
        startingAfter = parseTransferId(request.query.startingAfter);
        if (startingAfter === undefined) throw badRequest(`startingAfter ${JSON.stringify(request.query.startingAfter)} is not a transfer id (trf_…)`);
      }
      const rows = await listUnmatchedTransfers(deps.store, {
        merchantId: auth.merchantId,
        livemode: auth.livemode,
        chain: request.query.chain,
        limit: limit + 1,
        startingAfter,
      });
      const page = rows.slice(0, limit).map(transferView);
      const hasMore = rows.length > limit;
      return { data: page, hasMore, nextCursor: hasMore ? page[page.length - 1]!.id : null };
    },
  );

  typed.post(
    '/transfers/:id/attribution',
    {
      schema: {
        tags: ['Interface B'],
        summary: 'Attribute a transfer to a session by hand',
        description:
          'For a transfer the engine left unmatched (an ambiguous amount, a payment after the monitoring window): attributes it to one of your sessions on the same chain and wallet that accepts its token. The session is re-evaluated at once: its received total, state and events (e.g. `payment.confirming`, `payment.confirmed`, `payment.late_confirmed`, `payment.underpaid`, `payment.overpaid`) follow as if the transfer had matched. 404 for an unknown transfer or session, 409 when the transfer is already attributed or was removed by a reorg, or the session is settled, 400 when chain, wallet or token differ.',
        params: IdParam('id', 'trf'),
        body: AttributeBody,
        response: { 200: AttributionResponse, ...errorResponses(...WRITE_ERRORS, 404) },
      },
    },
    async (request) => {
      const auth = authOf(request);
      const result = await attributeTransfer(
        deps.store,
        {
          merchantId: auth.merchantId,
          livemode: auth.livemode,
          transferId: transferIdOrNotFound(request.params.id!),
          sessionId: request.body.sessionId,
        },
        (sql, attributed) =>
          auditApiChange(sql, request, 'transfer.attributed', {
            target: request.params.id!,
            details: { sessionId: request.body.sessionId, sessionStatus: attributed.sessionStatus },
          }),
      );
      return { transfer: transferView(result.transfer), session: { id: request.body.sessionId, status: result.sessionStatus } };
    },
  );
}
