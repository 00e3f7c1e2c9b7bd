import type { Store } from '../store/index.ts';
import { loadChains } from '../internal/chains.ts';
import { badRequest, conflict, notFound } from '../internal/errors.ts';
import { claimTransaction, normalizeTxHash } from '../engine/claims.ts';
import { claimMisfit } from '../engine/match.ts';
import { storeIfFinal, type LookedUpTransaction, type TokenMovement, type TransactionLookups } from '../ingest/lookup.ts';
import { getSessionById } from '../payments/sessions.ts';
import { loadCheckoutSession, type CheckoutSession } from './view.ts';
import { CHAIN_DISPLAY_NAMES } from './instructions.ts';

/** What a proof did: whether the transfers count now, and the session afterwards. */
export interface ProofOutcome {
  txHash: string;
  bound: boolean;
  message: string;
  session: CheckoutSession;
}

/** Why a looked-up transaction does not pay `session`, in the payer's words. */
function whyNotPaying(session: CheckoutSession, movements: TokenMovement[]): string {
  const chain = loadChains()[session.chain];
  const symbols = chain.tokens.map((token) => token.symbol).join(', ');
  if (movements.length === 0) return `it moves none of the tokens this gateway watches on ${CHAIN_DISPLAY_NAMES[session.chain]} (${symbols})`;
  if (movements.some((movement) => movement.to === session.payTo)) return "it pays the session's wallet in a token this session does not accept";
  return `it does not pay this session's wallet ${session.payTo}`;
}

/**
 * A payer proves a payment by its transaction (POST /checkout/{id}/transactions): the hash is
 * read for the session's chain, the transaction looked up on the chain at once (unless the
 * ingester has stored it already), and, when it moves one of the session's tokens into the
 * session's wallet within the session's window, claimed for the session through the engine's
 * `claimTransaction` (which binds stored transfers at once, or leaves the claim for the matcher
 * when the ingester stores them). Nothing is written on any refusal.
 * @throws {InvalidRequestError} unreadable hash, sandbox session; {NotFoundError} unknown session or transaction;
 * {ConflictError} a transaction that failed, pays something else, or pays / is claimed by another session;
 * {UnavailableError} no RPC for the chain, or it did not answer.
 */
export async function proveTransaction(store: Store, lookups: TransactionLookups, params: { sessionId: string; txHash: string }): Promise<ProofOutcome> {
  const session = await loadCheckoutSession(store, params.sessionId);
  if (!session) throw notFound(`no checkout session ${params.sessionId}`);
  if (!session.livemode) {
    throw badRequest(`sandbox sessions are on no real chain: pay them with POST /api/v1/sandbox/sessions/${session.id}/pay (a test key)`);
  }
  const chainName = CHAIN_DISPLAY_NAMES[session.chain];
  const txHash = normalizeTxHash(session.chain, params.txHash.trim());
  if (!txHash) {
    throw badRequest(`txHash is not a ${chainName} transaction ${session.chain === 'solana' ? 'signature (base58, 64 bytes)' : 'hash (0x and 64 hex digits)'}`);
  }

  const { rows } = await store.query<{ known: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM transfers WHERE livemode AND chain = $1 AND tx_hash = $2 AND status = 'observed')
         OR EXISTS (SELECT 1 FROM transaction_claims WHERE livemode AND chain = $1 AND tx_hash = $2) AS known`,
    [session.chain, txHash],
  );
  // Not stored yet: ask the chain, so a wrong hash is refused now rather than waiting forever.
  let looked: LookedUpTransaction | undefined;
  if (!rows[0]!.known) {
    const found = await lookups.lookup(session.chain, txHash);
    looked = found;
    if (!found.found) {
      throw notFound(
        `transaction ${txHash} was not found on ${chainName}: it is not in a block yet, or it is not a ${chainName} transaction. Retry once it is mined (a few seconds on most chains).`,
      );
    }
    if (found.failed) throw conflict(`transaction ${txHash} failed on chain and moved no tokens`);
    const paying = found.movements.filter((movement) => movement.to === session.payTo && session.tokenAddresses.includes(movement.token));
    if (paying.length === 0) throw conflict(`transaction ${txHash} does not pay this session: ${whyNotPaying(session, found.movements)}`);
    const window = (await getSessionById(store, { id: session.id, fields: ['monitorUntil'] }))!;
    const misfit = claimMisfit(
      { ...session, ...window },
      {
        livemode: true,
        chain: session.chain,
        to_address: session.payTo,
        token_address: paying[0]!.token,
        paid_at: found.blockTime ?? session.now,
      },
    );
    if (misfit) throw conflict(`transaction ${txHash} does not pay this session: ${misfit}`);
  }

  const claim = await store.transaction(async (sql) => {
    // In a final block the transfers are stored now (as the ingester would), so they count at once.
    if (looked) await storeIfFinal(sql, looked, { wallet: session.payTo });
    return claimTransaction(sql, { sessionId: session.id, chain: session.chain, txHash, source: 'proof' });
  });
  const after = (await loadCheckoutSession(store, session.id))!;
  const bound = claim.transferIds.length > 0;
  return {
    txHash,
    bound,
    message: bound
      ? `transaction ${txHash} pays this session; the payment confirms after ${after.requiredConfirmations} confirmations`
      : `transaction ${txHash} is claimed for this session; it counts as soon as the gateway's chain watcher stores it (normally within seconds): watch the status`,
    session: after,
  };
}
