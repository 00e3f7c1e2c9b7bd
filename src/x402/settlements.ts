import type { Sql } from '../store/index.ts';
import { newId, sha256Hex } from '../internal/crypto.ts';
import type { ChainName } from '../internal/config.ts';
import type { PaymentPayload } from './wire.ts';

/**
 * The `x402_settlements` rows (migration 018): one per EIP-3009 authorization this gateway
 * submits, unique on the token's own replay key (chain, token, payer, nonce). Statuses:
 * `submitting` (written before anything is sent), `submitted` (the relayer's signed transaction
 * and its hash recorded, then broadcast), `settled` (mined, succeeded), `failed` (mined and
 * reverted, or used elsewhere). Solana's `exact` payments (svm/) use the same rows: token = the
 * mint, payer = the transfer authority, nonce = the transaction's signature (the fee payer's,
 * deterministic over the message), `valid_before` = the block height after which it can no longer land.
 */
export type SettlementStatus = 'submitting' | 'submitted' | 'settled' | 'failed';

export interface Settlement {
  id: string;
  livemode: boolean;
  chain: ChainName;
  tokenAddress: string;
  payer: string;
  nonce: string;
  signatureHash: string;
  sessionId: string;
  merchantId: string;
  /** The wallet the authorization pays (lower case on EVM chains). */
  payTo: string;
  amount: bigint;
  /** EIP-3009's `validBefore` (unix seconds); on Solana the block height after which the transaction can no longer land. */
  validBefore: string;
  source: 'resource' | 'facilitator';
  /** How the payer's signature moves the tokens: EIP-3009 on the token, Permit2 through x402's proxy (migration 047), or a Solana TransferChecked the fee payer co-signs (migration 054). */
  method: 'eip3009' | 'permit2' | 'svm';
  status: SettlementStatus;
  txHash: string | null;
  rawTx: string | null;
  errorReason: string | null;
  /** Seconds since the row last changed, on the database's clock (stale in-flight rows are recovered). */
  idleSeconds: number;
}

const COLUMNS = `id, livemode, chain, token_address AS "tokenAddress", payer, nonce, signature_hash AS "signatureHash", session_id AS "sessionId",
  merchant_id AS "merchantId", pay_to AS "payTo", amount::text AS amount, valid_before::text AS "validBefore", source, method, status, tx_hash AS "txHash", raw_tx AS "rawTx", error_reason AS "errorReason",
  extract(epoch FROM now() - updated_at)::float8 AS "idleSeconds"`;

function toSettlement(row: Record<string, unknown>): Settlement {
  return { ...(row as unknown as Settlement), amount: BigInt(row.amount as string) };
}

/**
 * What identifies one signed authorization: sha256 over its fields and signature, lowercased. The
 * same header sent again hashes the same; another signature over the same nonce does not.
 */
export function signatureHash(payload: PaymentPayload): string {
  const a = payload.authorization;
  const permit2 = payload.permit2 ? [payload.permit2.token, payload.permit2.spender] : [];
  return sha256Hex([a.from, a.to, a.value, a.validAfter, a.validBefore, a.nonce, payload.signature, ...permit2].join(':').toLowerCase());
}

/** The replay key of an authorization on a token. */
export interface AuthorizationKey {
  chain: ChainName;
  tokenAddress: string;
  payer: string;
  nonce: string;
}

/** EVM hex is case-insensitive and stored lower case; Solana's base58 is case-sensitive and stored as is (x402 on Solana, svm/). */
const fold = (chain: ChainName, text: string) => (chain === 'solana' ? text : text.toLowerCase());
const keyValues = (key: AuthorizationKey) => [key.chain, fold(key.chain, key.tokenAddress), fold(key.chain, key.payer), fold(key.chain, key.nonce)];

export async function findSettlement(sql: Sql, key: AuthorizationKey): Promise<Settlement | undefined> {
  const { rows } = await sql.query(
    `SELECT ${COLUMNS} FROM x402_settlements WHERE chain = $1 AND token_address = $2 AND payer = $3 AND nonce = $4`,
    keyValues(key),
  );
  return rows[0] && toSettlement(rows[0]);
}

/**
 * A Solana settlement found by its payer and the hash of the transaction message it settled
 * (`signature_hash`; svm/settle.ts): the same row as its replay key, the fee payer's signature of
 * that message, names (ed25519 is deterministic), found without signing anything.
 */
export async function findSvmSettlementByMessage(
  sql: Sql,
  params: { tokenAddress: string; payer: string; messageHash: string },
): Promise<Settlement | undefined> {
  const { rows } = await sql.query(
    `SELECT ${COLUMNS} FROM x402_settlements WHERE chain = 'solana' AND token_address = $1 AND payer = $2 AND signature_hash = $3`,
    [params.tokenAddress, params.payer, params.messageHash],
  );
  return rows[0] && toSettlement(rows[0]);
}

export async function getSettlement(sql: Sql, id: string): Promise<Settlement | undefined> {
  const { rows } = await sql.query(`SELECT ${COLUMNS} FROM x402_settlements WHERE id = $1`, [id]);
  return rows[0] && toSettlement(rows[0]);
}

/**
 * Inserts a `submitting` row, or nothing when the authorization (or another one for the same
 * session) is already there: the caller then reads what is there.
 */
export async function insertSettlement(
  sql: Sql,
  params: AuthorizationKey & {
    livemode: boolean;
    signatureHash: string;
    sessionId: string;
    merchantId: string;
    payTo: string;
    amount: bigint;
    validBefore: string;
    source: Settlement['source'];
    method?: Settlement['method'];
  },
): Promise<Settlement | undefined> {
  const { rows } = await sql.query(
    `INSERT INTO x402_settlements (id, livemode, chain, token_address, payer, nonce, signature_hash, session_id, merchant_id, pay_to, amount, valid_before, source, status, method)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::numeric, $12::numeric, $13, 'submitting', $14)
     ON CONFLICT DO NOTHING
     RETURNING ${COLUMNS}`,
    [
      newId('x4s'),
      params.livemode,
      ...keyValues(params),
      params.signatureHash,
      params.sessionId,
      params.merchantId,
      fold(params.chain, params.payTo),
      params.amount.toString(),
      params.validBefore,
      params.source,
      params.method ?? 'eip3009',
    ],
  );
  return rows[0] && toSettlement(rows[0]);
}

/** The settlement holding a session (in flight or settled), if any. */
export async function activeSettlementOf(sql: Sql, sessionId: string): Promise<Settlement | undefined> {
  const { rows } = await sql.query(`SELECT ${COLUMNS} FROM x402_settlements WHERE session_id = $1 AND status <> 'failed'`, [sessionId]);
  return rows[0] && toSettlement(rows[0]);
}

/**
 * How many of `payer`'s authorizations on this token the relayer sent and saw revert on chain
 * (a `failed` row with a transaction hash: gas spent, nothing moved) in the last `withinSeconds`.
 * Read on the unique key's (chain, token_address, payer) prefix.
 */
export async function countRecentReverts(sql: Sql, key: Omit<AuthorizationKey, 'nonce'>, withinSeconds: number): Promise<number> {
  const { rows } = await sql.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM x402_settlements
      WHERE chain = $1 AND token_address = $2 AND payer = $3 AND status = 'failed' AND tx_hash IS NOT NULL
        AND updated_at > now() - make_interval(secs => $4)`,
    [key.chain, fold(key.chain, key.tokenAddress), fold(key.chain, key.payer), withinSeconds],
  );
  return rows[0]!.n;
}

/** Records the signed relayer transaction before it is broadcast. */
export async function markSubmitted(sql: Sql, id: string, tx: { hash: string; raw: string }): Promise<boolean> {
  const { rowCount } = await sql.query(
    `UPDATE x402_settlements SET status = 'submitted', tx_hash = $2, raw_tx = $3, updated_at = now() WHERE id = $1 AND status = 'submitting'`,
    [id, tx.hash, tx.raw],
  );
  return rowCount === 1;
}

/**
 * Final: mined and succeeded (`settled`) or not (`failed`, with why), from one of `from` only (a
 * failure before sending must not overwrite a row another process has since sent). `txHash` for
 * rows settled without a relayer (the sandbox). True when it changed the row.
 */
export async function markFinal(
  sql: Sql,
  id: string,
  outcome: { status: 'settled' | 'failed'; errorReason?: string; txHash?: string },
  from: readonly SettlementStatus[] = ['submitting', 'submitted'],
): Promise<boolean> {
  const { rowCount } = await sql.query(
    `UPDATE x402_settlements SET status = $2, error_reason = $3, tx_hash = coalesce($4, tx_hash), updated_at = now()
     WHERE id = $1 AND status = ANY($5::text[])`,
    [id, outcome.status, outcome.errorReason ?? null, outcome.txHash ?? null, from],
  );
  return rowCount === 1;
}

/**
 * Takes over an in-flight row whose owner went quiet for `leaseSeconds` (a crashed process):
 * true for exactly one caller, which then resolves it.
 */
export async function takeOver(sql: Sql, id: string, leaseSeconds: number): Promise<boolean> {
  const { rowCount } = await sql.query(
    `UPDATE x402_settlements SET updated_at = now() WHERE id = $1 AND status IN ('submitting', 'submitted') AND updated_at < now() - make_interval(secs => $2)`,
    [id, leaseSeconds],
  );
  return rowCount === 1;
}

/** In-flight rows idle for `leaseSeconds`: what a crash left behind. */
export async function staleSettlements(sql: Sql, leaseSeconds: number): Promise<Settlement[]> {
  const { rows } = await sql.query(
    `SELECT ${COLUMNS} FROM x402_settlements WHERE status IN ('submitting', 'submitted') AND updated_at < now() - make_interval(secs => $1) ORDER BY updated_at LIMIT 100`,
    [leaseSeconds],
  );
  return rows.map(toSettlement);
}
