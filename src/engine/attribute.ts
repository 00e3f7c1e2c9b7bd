import type { Store, Sql } from '../store/index.ts';
import type { ChainName } from '../internal/config.ts';
import { loadChains, type ChainConfig } from '../internal/chains.ts';
import { badRequest, conflict, notFound } from '../internal/errors.ts';
import { evaluateSessions, type Change } from './evaluate.ts';
import { lockChain } from './lock.ts';
import { getSessionById, lockSession } from '../payments/sessions.ts';

/** A stored transfer as the merchant sees it. */
export interface TransferRow {
  id: bigint;
  livemode: boolean;
  chain: ChainName;
  tx_hash: string;
  log_index: number;
  block_number: bigint;
  block_time: Date | null;
  token_address: string;
  from_address: string | null;
  to_address: string;
  amount: string;
  status: 'observed' | 'removed' | 'failed';
  session_id: string | null;
  match_method: 'reference' | 'amount' | 'manual' | 'claim' | 'address' | 'sweep' | null;
  matched_at: Date | null;
  observed_at: Date;
}

const TRANSFER_COLUMNS = `t.id, t.livemode, t.chain, t.tx_hash, t.log_index, t.block_number, t.block_time, t.token_address, t.from_address,
  t.to_address, t.amount::text, t.status, t.session_id, t.match_method, t.matched_at, t.observed_at`;

/** The public id of a transfer (`trf_<number>`), and back; undefined for anything else. */
export const transferPublicId = (id: bigint): string => `trf_${id}`;
export function parseTransferId(text: string): bigint | undefined {
  const match = /^trf_([1-9]\d{0,18})$/.exec(text);
  if (!match) return undefined;
  const id = BigInt(match[1]!);
  // Ids are bigserial: anything past int8's range names no transfer (and Postgres would refuse it).
  return id <= 9_223_372_036_854_775_807n ? id : undefined;
}

/**
 * A transfer is the merchant's when it went to a wallet the merchant has verified, to one of its
 * sessions' deposit addresses (each is one session's), or to one of its wallets or sessions'
 * addresses that no other merchant also claims (an unverified address another merchant uses too
 * proves nothing: either could have typed it in).
 */
const OWNED_BY = `(EXISTS (SELECT 1 FROM payment_sessions s WHERE s.merchant_id = $1 AND s.chain = t.chain AND s.deposit_address = t.to_address)
  OR EXISTS (SELECT 1 FROM wallets w WHERE w.merchant_id = $1 AND w.chain = t.chain AND w.address = t.to_address AND w.verified_at IS NOT NULL)
  OR ((EXISTS (SELECT 1 FROM wallets w WHERE w.merchant_id = $1 AND w.chain = t.chain AND w.address = t.to_address)
       OR EXISTS (SELECT 1 FROM payment_sessions s WHERE s.merchant_id = $1 AND s.livemode = t.livemode AND s.chain = t.chain AND s.pay_to = t.to_address))
      AND NOT EXISTS (SELECT 1 FROM wallets w WHERE w.merchant_id <> $1 AND w.chain = t.chain AND w.address = t.to_address)
      AND NOT EXISTS (SELECT 1 FROM payment_sessions s WHERE s.merchant_id <> $1 AND s.livemode = t.livemode AND s.chain = t.chain AND s.pay_to = t.to_address)))`;

/**
 * The merchant's transfers that matched no session (newest first, cursor by id): counted on chain
 * (`observed`), looked at by matching, attributed to nothing. Sandbox keys see sandbox transfers.
 */
export async function listUnmatchedTransfers(
  sql: Sql,
  params: { merchantId: string; livemode: boolean; chain?: ChainName | undefined; limit: number; startingAfter?: bigint | undefined },
): Promise<TransferRow[]> {
  const { rows } = await sql.query<TransferRow>(
    `SELECT ${TRANSFER_COLUMNS} FROM transfers t
      WHERE t.livemode = $2 AND t.session_id IS NULL AND t.status = 'observed' AND t.match_method IS DISTINCT FROM 'sweep'
        AND NOT EXISTS (SELECT 1 FROM transfers_undecided q WHERE q.transfer_id = t.id)
        AND ($3::text IS NULL OR t.chain = $3) AND ($4::int8 IS NULL OR t.id < $4) AND ${OWNED_BY}
      ORDER BY t.id DESC LIMIT $5`,
    [params.merchantId, params.livemode, params.chain ?? null, params.startingAfter ?? null, params.limit],
  );
  return rows;
}

/**
 * Every transfer attributed to a session, oldest first, whatever its state (a transfer removed
 * by a reorg or failed stays listed, with its status): the payment page's "paid by" list. The
 * caller has checked the session is the merchant's.
 */
export async function listSessionTransfers(sql: Sql, params: { sessionId: string; livemode: boolean }): Promise<TransferRow[]> {
  const { rows } = await sql.query<TransferRow>(
    `SELECT ${TRANSFER_COLUMNS} FROM transfers t WHERE t.session_id = $1 AND t.livemode = $2 ORDER BY t.block_number, t.log_index, t.id`,
    [params.sessionId, params.livemode],
  );
  return rows;
}

/**
 * Attributes a transfer to a session by hand (the merchant knows who paid): the transfer must be
 * the merchant's, counted on chain and not attributed yet; the session must be the merchant's, in
 * the same mode, on the same chain and wallet, accept the transfer's token, and not be settled.
 * Then the session is evaluated at once in the same transaction, so the response shows its new
 * state and the events are in the outbox. Manual attribution ignores the monitoring window: the
 * merchant decides.
 * @throws {NotFoundError} unknown transfer or session; {ConflictError} already attributed / removed / settled,
 * {InvalidRequestError} chain, wallet or token mismatch. Nothing is written on any error.
 */
export async function attributeTransfer(
  store: Store,
  params: { merchantId: string; livemode: boolean; transferId: bigint; sessionId: string; chains?: Record<ChainName, ChainConfig> },
  inTransaction?: (sql: Sql, result: { sessionStatus: string }) => Promise<void>,
): Promise<{ transfer: TransferRow; changes: Change[]; sessionStatus: string }> {
  const chains = params.chains ?? loadChains();
  const publicId = transferPublicId(params.transferId);
  return store.transaction(async (sql) => {
    const { rows: found } = await sql.query<{ chain: ChainName }>(`SELECT t.chain FROM transfers t WHERE t.id = $2 AND t.livemode = $3 AND ${OWNED_BY}`, [
      params.merchantId,
      params.transferId,
      params.livemode,
    ]);
    if (!found[0]) throw notFound(`transfer ${publicId} not found`);
    const chain = found[0].chain;
    await lockChain(sql, { livemode: params.livemode, chain });
    const { rows: transfers } = await sql.query<TransferRow>(`SELECT ${TRANSFER_COLUMNS} FROM transfers t WHERE t.id = $1 FOR UPDATE`, [params.transferId]);
    const transfer = transfers[0]!;
    if (transfer.status !== 'observed')
      throw conflict(
        `transfer ${publicId} is ${transfer.status === 'removed' ? 'no longer on chain (removed by a reorg)' : 'a failed transaction'} and cannot pay a session`,
      );
    if (transfer.session_id) throw conflict(`transfer ${publicId} is already attributed to session ${transfer.session_id}`);
    if (transfer.match_method === 'sweep')
      throw conflict(`transfer ${publicId} is a sweep of a deposit address into your wallet: the deposit it moves already paid its session`);

    const session = await lockSession(sql, { merchantId: params.merchantId, livemode: params.livemode, id: params.sessionId });
    if (!session) throw notFound(`session ${params.sessionId} not found`);
    if (session.chain !== chain) throw badRequest(`transfer ${publicId} is on ${chain} but session ${session.id} is on ${session.chain}`);
    if (session.payTo !== transfer.to_address && session.depositAddress !== transfer.to_address)
      throw badRequest(
        `transfer ${publicId} went to ${transfer.to_address}, not to the session's ${session.depositAddress ? 'deposit address' : 'wallet'} ${session.depositAddress ?? session.payTo}`,
      );
    if (!session.tokenAddresses.includes(transfer.token_address)) {
      throw badRequest(`transfer ${publicId} is in token ${transfer.token_address}, which session ${session.id} does not accept`);
    }
    if (session.status === 'settled') throw conflict(`session ${session.id} is settled; it cannot take more payments`);

    await sql.query(`UPDATE transfers SET session_id = $2, match_method = 'manual', matched_at = now() WHERE id = $1`, [params.transferId, session.id]);
    // Attributed by hand before matching looked at it: decided, so out of matching's queue.
    await sql.query('DELETE FROM transfers_undecided WHERE transfer_id = $1', [params.transferId]);
    const changes = await evaluateSessions(sql, { livemode: params.livemode, chain: chains[chain], sessionIds: [session.id] });
    const { rows: after } = await sql.query<TransferRow>(`SELECT ${TRANSFER_COLUMNS} FROM transfers t WHERE t.id = $1`, [params.transferId]);
    const { status } = (await getSessionById(sql, { id: session.id, fields: ['status'] }))!;
    // The caller's record of it (the audit entry) commits with the attribution.
    await inTransaction?.(sql, { sessionStatus: status });
    return { transfer: after[0]!, changes, sessionStatus: status };
  });
}
