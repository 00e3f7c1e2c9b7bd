import type { Sql } from '../store/index.ts';
import type { ChainName } from '../internal/config.ts';
import { loadChains, type ChainConfig } from '../internal/chains.ts';
import { badRequest, conflict, notFound } from '../internal/errors.ts';
import { getSessionById } from '../payments/sessions.ts';
import { evaluateSessions, type Change } from './evaluate.ts';
import { lockChain } from './lock.ts';
import { claimMisfit, matchTransfers, TRANSFER_TO_MATCH_COLUMNS, type TransferToMatch } from './match.ts';
import { amountMatchable, type Candidate } from './matchRules.ts';
import { readCandidates } from './batchCandidates.ts';
import { decideTransfer, publicReasonOf } from './claimDecision.ts';
import type { PaymentStatus } from '../payments/stateMachine.ts';

/** Who claims a transaction for a session: a payer proving it by hash, or the gateway's own x402 settlement. */
export type ClaimSource = 'proof' | 'x402';

/** What `claimTransaction` did. */
export interface ClaimResult {
  /** The transaction as stored (lowercase hex on EVM chains). */
  txHash: string;
  /** True when this call wrote the claim; false when the same session had claimed it before (idempotent). */
  created: boolean;
  /**
   * The transaction's transfers attributed to the session (by this call or before). Empty while
   * the ingester has not stored the transaction yet: the claim then waits, and the matcher binds
   * the transfers when they arrive.
   */
  transferIds: bigint[];
  /** The session's state changes the binding caused (evaluated at once, events in the outbox). */
  changes: Change[];
  sessionStatus: PaymentStatus;
}

const EVM_TX_HASH = /^0x[0-9a-fA-F]{64}$/;
/** A Solana signature: 64 bytes in base58, 86 to 88 characters (fewer only for leading zero bytes, which real signatures practically never have). */
const SOLANA_SIGNATURE = /^[1-9A-HJ-NP-Za-km-z]{64,88}$/;

/**
 * A transaction hash as the transfers table stores it for `chain` (EVM: lowercase `0x` + 64 hex;
 * solana: the base58 signature as is), or undefined when it cannot be one.
 */
export function normalizeTxHash(chain: ChainName, text: string): string | undefined {
  if (chain === 'solana') return SOLANA_SIGNATURE.test(text) ? text : undefined;
  return EVM_TX_HASH.test(text) ? text.toLowerCase() : undefined;
}

interface StoredTransfer extends TransferToMatch {
  session_id: string | null;
  /** Still in matching's queue (migration 026): no matching has decided it. */
  undecided: boolean;
}

/** A token movement of a looked-up transaction (EVM: log index; solana: credited account index). */
export interface LookedUpMovement {
  index: number;
  token: string;
  to: string;
  amount: bigint;
  paidAt: Date;
}

/**
 * How the matcher would decide the claim just written for a transaction not stored yet, from its
 * looked-up movements into the session (a reference key is not known here: the matcher still
 * applies that rule when the transfers are stored). The public reason of a refusal, or undefined.
 */
async function previewRefusal(
  sql: Sql,
  params: {
    session: Pick<Candidate, 'id' | 'livemode' | 'chain' | 'payTo' | 'tokenAddresses' | 'createdAt' | 'monitorUntil'>;
    txHash: string;
    movements: LookedUpMovement[];
  },
): Promise<string | undefined> {
  const { session } = params;
  const transfers: TransferToMatch[] = params.movements
    .map((movement) => ({
      id: BigInt(-1 - movement.index),
      tx_hash: params.txHash,
      livemode: session.livemode,
      chain: session.chain,
      token_address: movement.token,
      to_address: movement.to,
      amount: String(movement.amount),
      reference_keys: [],
      paid_at: movement.paidAt,
    }))
    .filter((transfer) => !claimMisfit(session, transfer));
  if (transfers.length === 0) return undefined;
  const candidates = await readCandidates(sql, transfers);
  const pending = new Map<string, bigint>();
  for (const transfer of transfers) {
    const { found, refusedClaim } = decideTransfer(transfer, candidates, pending);
    if (refusedClaim) return publicReasonOf(refusedClaim);
    if (found) pending.set(found.sessionId, (pending.get(found.sessionId) ?? 0n) + BigInt(transfer.amount));
  }
  return undefined;
}

/** Puts transfers matching left unmatched back in its queue (migration 026). $1 transfer ids. */
const REQUEUE = `INSERT INTO transfers_undecided (transfer_id, livemode, chain, block_number, log_index)
  SELECT id, livemode, chain, block_number, log_index FROM transfers WHERE id = ANY($1::bigint[])
  ON CONFLICT (transfer_id) DO NOTHING`;

/** The merchants that verified a receiving address on a chain. $1 chain, $2 address. */
const SELECT_VERIFIERS = 'SELECT merchant_id FROM wallets WHERE chain = $1 AND address = $2 AND verified_at IS NOT NULL';

/**
 * Binds a transaction to a payment session explicitly, in the caller's transaction
 * (`store.transaction`; call it before locking sessions yourself: it takes the engine's chain
 * lock, then the transaction's transfer rows, then the session, the order every payment writer
 * keeps). The claim is one row per (livemode, chain, tx hash), first claim wins:
 * - claimed by another session before: refused (conflict), nothing written;
 * - the transaction's transfers already stored: those that fit the session (its wallet, one of
 *   its tokens, paid within its window; `claimMisfit`) are attributed to it now (match method
 *   `claim`) by the matcher, with the claim in place (those it had left unmatched are queued
 *   again), and the session is evaluated at once; a transaction whose stored transfers fit none,
 *   or whose fitting transfer is already attributed to another session, is refused (conflict),
 *   nothing written. A payer's proof (`proof`) also yields to a reference or exact due amount
 *   naming another session, and binds no more than the session owes plus its tolerance
 *   (claimDecision.ts, docs/payment-lifecycle.md);
 * - nothing stored yet: the claim is written and waits; the matcher honours it before reference
 *   and amount matching when the ingester stores the transfers.
 * Claiming again for the same session is idempotent.
 * @throws {InvalidRequestError} unreadable hash, chain not the session's; {NotFoundError} unknown session; {ConflictError} as above.
 */
export async function claimTransaction(
  sql: Sql,
  params: {
    sessionId: string;
    chain: ChainName;
    txHash: string;
    source: ClaimSource;
    chains?: Record<ChainName, ChainConfig>;
    /** The transaction's token movements as the chain showed them, when the caller looked it up (a payer's proof). */
    lookedUp?: LookedUpMovement[];
  },
): Promise<ClaimResult> {
  const txHash = normalizeTxHash(params.chain, params.txHash);
  if (!txHash)
    throw badRequest(
      `${JSON.stringify(params.txHash)} is not a ${params.chain === 'solana' ? 'Solana transaction signature' : 'transaction hash (0x and 64 hex digits)'}`,
    );
  const found = await getSessionById(sql, { id: params.sessionId, fields: ['livemode', 'chain'] });
  if (!found) throw notFound(`session ${params.sessionId} not found`);
  if (found.chain !== params.chain) throw badRequest(`session ${params.sessionId} is on ${found.chain}, not on ${params.chain}`);
  const { livemode, chain } = found;
  await lockChain(sql, { livemode, chain });

  const { rows: claims } = await sql.query<{ session_id: string }>(
    'SELECT session_id FROM transaction_claims WHERE livemode = $1 AND chain = $2 AND tx_hash = $3',
    [livemode, chain, txHash],
  );
  if (claims[0] && claims[0].session_id !== params.sessionId) throw conflict(`transaction ${txHash} is already claimed by another payment session`);

  const { rows: stored } = await sql.query<StoredTransfer>(
    `SELECT ${TRANSFER_TO_MATCH_COLUMNS}, session_id, EXISTS (SELECT 1 FROM transfers_undecided q WHERE q.transfer_id = transfers.id) AS undecided
       FROM transfers WHERE livemode = $1 AND chain = $2 AND tx_hash = $3 AND status = 'observed' ORDER BY log_index FOR UPDATE`,
    [livemode, chain, txHash],
  );
  const session = (await getSessionById(sql, {
    id: params.sessionId,
    fields: ['id', 'merchantId', 'livemode', 'chain', 'payTo', 'tokenAddresses', 'createdAt', 'monitorUntil'],
    forUpdate: true,
  }))!;
  // A payer's proof for a session on a live address that other merchants verified and its own
  // did not (an inline wallet given before the owner proved control) would bind the owner's money
  // to that session, and take from the owner the transfers its amount matching left for it to
  // attribute: refused, as amount matching there refuses it (`amountMatchable`).
  if (params.source === 'proof' && livemode) {
    const { rows: verifiers } = await sql.query<{ merchant_id: string }>(SELECT_VERIFIERS, [chain, session.payTo]);
    if (!amountMatchable(session, new Set(verifiers.map((row) => row.merchant_id)))) {
      throw conflict(`transaction ${txHash} cannot be claimed for this session: its wallet is verified by another account`);
    }
  }
  const fitting = stored.filter((transfer) => !claimMisfit(session, transfer));
  if (stored.length > 0 && fitting.length === 0) {
    throw conflict(`transaction ${txHash} does not pay this session: ${claimMisfit(session, stored[0]!)}`);
  }
  if (fitting.some((transfer) => transfer.session_id !== null && transfer.session_id !== session.id)) {
    throw conflict(`transaction ${txHash} already pays another payment session`);
  }

  const created = !claims[0];
  if (created) {
    await sql.query('INSERT INTO transaction_claims (livemode, chain, tx_hash, session_id, source) VALUES ($1, $2, $3, $4, $5)', [
      livemode,
      chain,
      txHash,
      session.id,
      params.source,
    ]);
  }
  // Transfers matching already left unmatched go back to its queue, so that every fitting transfer
  // is decided by the matcher now, with the claim in place: a proof made before or after the
  // ingester stored the transaction, before or after matching looked at it, meets the same rules
  // under the same lock (claimDecision.ts), and no ordering of ingest, matching and proof lets it
  // win what matching would give another session.
  const unmatched = fitting.filter((transfer) => !transfer.undecided && transfer.session_id === null).map((transfer) => transfer.id);
  if (unmatched.length > 0) await sql.query(REQUEUE, [unmatched]);
  // Not stored yet, but looked up: decided now as the matcher will decide it when the ingester
  // stores it, so a proof the matcher would refuse is refused at once rather than answered 202.
  if (stored.length === 0 && params.lookedUp && params.source === 'proof') {
    const refusal = await previewRefusal(sql, { session, txHash, movements: params.lookedUp });
    if (refusal) throw conflict(`transaction ${txHash} cannot be claimed for this session: ${refusal}`);
  }
  let bound = false;
  if (unmatched.length > 0 || fitting.some((transfer) => transfer.undecided)) {
    const match = await matchTransfers(sql, { livemode, chain, limit: stored.length, txHash });
    const fittingIds = new Set(fitting.map((transfer) => transfer.id));
    const refused = match.refusedClaims.find((refusal) => fittingIds.has(refusal.transferId));
    if (refused) throw conflict(`transaction ${txHash} cannot be claimed for this session: ${refused.publicReason}`);
    bound = match.matched > 0;
  }

  const changes = bound ? await evaluateSessions(sql, { livemode, chain: (params.chains ?? loadChains())[chain], sessionIds: [session.id] }) : [];
  const { rows: attributed } = await sql.query<{ id: bigint }>(
    `SELECT id FROM transfers WHERE livemode = $1 AND chain = $2 AND tx_hash = $3 AND status = 'observed' AND session_id = $4 ORDER BY log_index`,
    [livemode, chain, txHash, session.id],
  );
  const { status } = (await getSessionById(sql, { id: session.id, fields: ['status'] }))!;
  return { txHash, created, transferIds: attributed.map((row) => row.id), changes, sessionStatus: status };
}
