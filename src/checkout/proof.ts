import type { Store } from '../store/index.ts';
import { loadChains } from '../internal/chains.ts';
import { badRequest, conflict, forbidden, notFound } from '../internal/errors.ts';
import { verifyWalletSignature } from '../internal/signatures.ts';
import { claimTransaction, normalizeTxHash } from '../engine/claims.ts';
import { claimMisfit } from '../engine/match.ts';
import { storeIfFinal, type LookedUpTransaction, type TokenMovement, type TransactionLookups } from '../ingest/lookup.ts';
import { getSessionById } from '../payments/sessions.ts';
import { loadCheckoutSession, type CheckoutSession } from './view.ts';
import { CHAIN_DISPLAY_NAMES } from './instructions.ts';
import { proofMessage } from './proofMessage.ts';

/** What a proof did: whether the transfers count now, and the session afterwards. */
export interface ProofOutcome {
  txHash: string;
  bound: boolean;
  message: string;
  session: CheckoutSession;
}

/** Why a transaction's token movements do not pay `session`, in the payer's words. */
function whyNotPaying(session: CheckoutSession, movements: Pick<TokenMovement, 'to'>[]): string {
  const chain = loadChains()[session.chain];
  const symbols = chain.tokens.map((token) => token.symbol).join(', ');
  if (movements.length === 0) return `it moves none of the tokens this gateway watches on ${CHAIN_DISPLAY_NAMES[session.chain]} (${symbols})`;
  if (movements.some((movement) => movement.to === session.payTo)) return "it pays the session's wallet in a token this session does not accept";
  return `it does not pay this session's wallet ${session.payTo}`;
}

/** A transaction's movements as the ingester stored them. $1 chain, $2 tx hash. */
const SELECT_STORED = `SELECT token_address AS token, from_address AS "from", to_address AS "to"
   FROM transfers WHERE livemode AND chain = $1 AND tx_hash = $2 AND status = 'observed' ORDER BY log_index`;

/**
 * The transaction's movements into the session's wallet in its tokens, from the stored transfers,
 * or, when the ingester has not stored the transaction, from the chain at once (so a wrong hash is
 * refused now rather than waiting forever). Refuses a transaction that pays nothing of the session.
 */
async function payingMovements(
  store: Store,
  lookups: TransactionLookups,
  session: CheckoutSession,
  txHash: string,
): Promise<{ paying: Pick<TokenMovement, 'from'>[]; looked?: LookedUpTransaction }> {
  const chainName = CHAIN_DISPLAY_NAMES[session.chain];
  const { rows: stored } = await store.query<Pick<TokenMovement, 'token' | 'from' | 'to'>>(SELECT_STORED, [session.chain, txHash]);
  const pays = (movement: Pick<TokenMovement, 'token' | 'to'>) => movement.to === session.payTo && session.tokenAddresses.includes(movement.token);
  if (stored.length > 0) {
    const paying = stored.filter(pays);
    if (paying.length === 0) throw conflict(`transaction ${txHash} does not pay this session: ${whyNotPaying(session, stored)}`);
    return { paying };
  }
  const found = await lookups.lookup(session.chain, txHash);
  if (!found.found) {
    throw notFound(
      `transaction ${txHash} was not found on ${chainName}: it is not in a block yet, or it is not a ${chainName} transaction. Retry once it is mined (a few seconds on most chains).`,
    );
  }
  if (found.failed) throw conflict(`transaction ${txHash} failed on chain and moved no tokens`);
  const paying = found.movements.filter(pays);
  if (paying.length === 0) throw conflict(`transaction ${txHash} does not pay this session: ${whyNotPaying(session, found.movements)}`);
  const window = (await getSessionById(store, { id: session.id, fields: ['monitorUntil'] }))!;
  const misfit = claimMisfit(
    { ...session, ...window },
    { livemode: true, chain: session.chain, to_address: session.payTo, token_address: paying[0]!.token, paid_at: found.blockTime ?? session.now },
  );
  if (misfit) throw conflict(`transaction ${txHash} does not pay this session: ${misfit}`);
  return { paying, looked: found };
}

/**
 * Refuses unless `signature` is the signature, by the sender of every transfer that pays the
 * session, of the proof message naming this gateway, the session and the transaction: a
 * transaction hash is public, so only its sender's signature says whose payment it is.
 */
async function requireSenderSignature(
  lookups: TransactionLookups,
  params: { session: CheckoutSession; txHash: string; gateway: string; signature: string | undefined; paying: Pick<TokenMovement, 'from'>[] },
): Promise<void> {
  const { session, txHash } = params;
  const senders = [...new Set(params.paying.map((movement) => movement.from))];
  if (senders.length !== 1 || senders[0] === null) {
    throw conflict(
      `transaction ${txHash} pays this session from ${senders.length > 1 ? 'several senders' : 'no identifiable sender'}, so no one signature can prove it; the merchant can attribute it`,
    );
  }
  const sender = senders[0]!;
  const message = proofMessage({ gateway: params.gateway, sessionId: session.id, chain: session.chain, txHash });
  const how = session.chain === 'solana' ? 'an ed25519 signature (signMessage), base58 or base64' : 'an EIP-191 personal_sign signature';
  if (!params.signature) {
    throw badRequest(`signature is required: ${how} by the transfer's sender ${sender} of exactly this message: ${JSON.stringify(message)}`);
  }
  const valid = await verifyWalletSignature({
    chain: session.chain,
    address: sender,
    message,
    signature: params.signature.trim(),
    contractCheck: session.chain === 'solana' ? undefined : (check) => lookups.isValidContractSignature(check),
  });
  if (!valid) {
    throw forbidden(
      `signature is not ${how} by the transfer's sender ${sender} of this session's proof message for ${txHash}: only the wallet that sent a payment can prove it`,
    );
  }
}

/**
 * A payer proves a payment by its transaction (POST /checkout/{id}/transactions): the hash is read
 * for the session's chain, the transaction's transfers into the session's wallet found (stored, or
 * looked up on the chain at once), the payer's signature checked against their sender
 * (`requireSenderSignature`), and the transaction claimed for the session through the engine's
 * `claimTransaction`, which decides it under the engine's lock with matching's own rules (a proof
 * never takes another session's exact due amount, nor more than the session still owes).
 * Nothing is written on any refusal.
 * @throws {InvalidRequestError} unreadable hash, missing signature, sandbox session; {PermissionError} a
 * signature not by the transfer's sender over this proof's message; {NotFoundError} unknown session or
 * transaction; {ConflictError} a transaction that failed, pays something else, or pays / is claimed by
 * another session; {UnavailableError} no RPC for the chain, or it did not answer.
 */
export async function proveTransaction(
  store: Store,
  lookups: TransactionLookups,
  params: { sessionId: string; txHash: string; signature?: string; gateway: string },
): Promise<ProofOutcome> {
  const session = await loadCheckoutSession(store, params.sessionId);
  if (!session) throw notFound(`no checkout session ${params.sessionId}`);
  if (!session.livemode) {
    throw badRequest(`sandbox sessions are on no real chain: pay them with POST /api/v1/sandbox/sessions/${session.id}/pay (a test key)`);
  }
  if (session.attribution === 'address') {
    throw badRequest(`this session has its own deposit address ${session.depositAddress}: every transfer to it counts for the session without a proof`);
  }
  const txHash = normalizeTxHash(session.chain, params.txHash.trim());
  if (!txHash) {
    const expected = session.chain === 'solana' ? 'signature (base58, 64 bytes)' : 'hash (0x and 64 hex digits)';
    throw badRequest(`txHash is not a ${CHAIN_DISPLAY_NAMES[session.chain]} transaction ${expected}`);
  }
  const { paying, looked } = await payingMovements(store, lookups, session, txHash);
  await requireSenderSignature(lookups, { session, txHash, gateway: params.gateway, signature: params.signature, paying });

  const claim = await store.transaction(async (sql) => {
    // In a final block the transfers are stored now (as the ingester would), so they count at once.
    if (looked) await storeIfFinal(sql, looked, { wallet: session.payTo });
    const lookedUp = looked?.found ? looked.movements.map((movement) => ({ ...movement, paidAt: looked.blockTime ?? session.now })) : undefined;
    return claimTransaction(sql, { sessionId: session.id, chain: session.chain, txHash, source: 'proof', lookedUp });
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
