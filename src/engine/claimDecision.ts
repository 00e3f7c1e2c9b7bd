import { amountMatchable, inWindow, type Candidate, type MatchMethod, type TransferToMatch } from './matchRules.ts';
import { decideByEvidence, type BatchCandidates, type Evidence } from './batchCandidates.ts';

/**
 * How matching decides one transfer when a claim names a session for its transaction: the
 * claim's fit (`claimMisfit`), and for a payer's proof the rules that keep it from taking what is
 * not the prover's (stronger evidence for another session, more than the session owes). The one
 * place both the matcher and `claimTransaction` (through the matcher) decide claims.
 */

/**
 * Why `transfer` cannot pay the session a claim names, or undefined when it can: it must be in
 * the session's mode and chain, pay its wallet in one of its tokens, and have been paid within
 * its window (created_at less the clock skew .. monitor_until), as amount matching requires, so a
 * claim cannot bind an old payment to a new session.
 */
export function claimMisfit(
  session: Pick<Candidate, 'livemode' | 'chain' | 'payTo' | 'tokenAddresses' | 'createdAt' | 'monitorUntil'>,
  transfer: Pick<TransferToMatch, 'livemode' | 'chain' | 'to_address' | 'token_address' | 'paid_at'>,
): string | undefined {
  if (session.livemode !== transfer.livemode || session.chain !== transfer.chain) return `it is not on the session's chain (${session.chain})`;
  if (session.payTo !== transfer.to_address) return `it pays ${transfer.to_address}, not the session's wallet ${session.payTo}`;
  if (!session.tokenAddresses.includes(transfer.token_address)) return `it pays in token ${transfer.token_address}, which the session does not accept`;
  if (!inWindow(session, transfer.paid_at)) {
    return transfer.paid_at < session.createdAt ? 'it was paid before the session was created' : "it was paid after the session's monitoring window";
  }
  return undefined;
}

/**
 * Whether a payer's proof must yield to what the transfer itself says: a Solana Pay reference
 * naming another session, or exactly another session's due amount. No exception, not even "what
 * the claiming session still misses": that exception let a prover who underpaid their own session
 * by exactly a victim's due amount take the victim's transfer (issue 24). A proof is the
 * sender's word about its own transfer; an exact due amount is the chain's evidence for another
 * session, and the evidence wins.
 */
function outranksProof(evidence: Evidence, transfer: TransferToMatch, claimed: Candidate): boolean {
  if (evidence.session.id === claimed.id) return false;
  if (evidence.method === 'reference') return true;
  return evidence.session.amountDue === BigInt(transfer.amount);
}

/**
 * Another session on the transfer's wallet, of any merchant amount matching may pay there (on an
 * address one merchant verified, only that merchant's: `amountMatchable`), whose due amount the
 * transfer is exactly and which still asks for it (the {@link outranksProof} rule without amount
 * matching's one-merchant condition).
 */
function exactDueElsewhere(
  transfer: TransferToMatch,
  candidates: BatchCandidates,
  pending: ReadonlyMap<string, bigint>,
  claimed: Candidate,
): Candidate | undefined {
  const amount = BigInt(transfer.amount);
  return (candidates.byWallet.get(transfer.to_address)?.byDue.get(amount) ?? []).find(
    (candidate) =>
      candidate.id !== claimed.id &&
      candidate.tokenAddresses.includes(transfer.token_address) &&
      inWindow(candidate, transfer.paid_at) &&
      candidate.received + (pending.get(candidate.id) ?? 0n) < candidate.amountDue,
  );
}

/**
 * Why a proof may not bind `transfer` to `claimed` by its size, or undefined: a proof binds at
 * most what the session still owes plus the merchant's tolerance on its due amount, so a proof
 * can never turn a large transfer (the merchant moving its own funds in) into a small session's
 * payment. `claimed.received` includes what this batch already gave it.
 */
export function proofExcess(claimed: Pick<Candidate, 'amountDue' | 'received' | 'toleranceBps'>, amount: bigint): string | undefined {
  const owed = claimed.amountDue > claimed.received ? claimed.amountDue - claimed.received : 0n;
  // Cumulative: the tolerance is room above the due amount once, not again with every proof.
  const room = claimed.amountDue + (claimed.amountDue * BigInt(claimed.toleranceBps)) / 10_000n - claimed.received;
  if (amount <= room) return undefined;
  return `it moves ${amount} base units, more than this session still owes (${owed}) plus the merchant's payment tolerance`;
}

/** What matching decided for one transfer: a session, and the refusal of a claim on its transaction when there was one. */
export interface Decision {
  found?: { sessionId: string; method: MatchMethod };
  refusedClaim?: ClaimRefusal;
}

/** Why a claim was not honoured for one transfer: it does not fit the session (`claimMisfit`), or stronger evidence names another session. */
export type ClaimRefusal = { kind: 'misfit'; misfit: string } | { kind: 'outranked'; method: 'reference' | 'amount'; sessionId: string };

/**
 * The session `transfer` pays. A claim on its transaction comes first: the transfer goes to the
 * claiming session when it fits it (`claimMisfit`), and otherwise to no session (a claimed
 * transaction is never handed to another session by amount); it is left for the merchant and
 * the refusal recorded. A payer's proof yields only to stronger evidence (`outranksProof`).
 */
export function decideTransfer(transfer: TransferToMatch, candidates: BatchCandidates, pending: ReadonlyMap<string, bigint>): Decision {
  const claim = candidates.claims.get(transfer.tx_hash);
  if (!claim) {
    const evidence = decideByEvidence(transfer, candidates);
    return { found: evidence && { sessionId: evidence.session.id, method: evidence.method } };
  }
  const misfit = claimMisfit(claim.session, transfer);
  if (misfit) {
    // A payer's proof speaks for the transfers that pay its session only: another transfer of the
    // same transaction (a batch paying another wallet, maybe another merchant's exact due
    // amount) is matched as if nothing claimed it, so a proof cannot hold it hostage. The
    // gateway's own x402 transaction has one transfer, to its session; one that pays elsewhere
    // is suspect and waits for the merchant.
    if (claim.source === 'proof') {
      const evidence = decideByEvidence(transfer, candidates);
      return { found: evidence && { sessionId: evidence.session.id, method: evidence.method } };
    }
    return { refusedClaim: { kind: 'misfit', misfit } };
  }
  if (claim.source === 'proof' && !amountMatchable(claim.session, candidates.verifiers.get(claim.session.payTo))) {
    // The session's address was verified by other merchants since the proof was made: refused as
    // claimTransaction refuses it now, and the transfer is matched as if nothing claimed it.
    const evidence = decideByEvidence(transfer, candidates);
    return {
      found: evidence && { sessionId: evidence.session.id, method: evidence.method },
      refusedClaim: { kind: 'misfit', misfit: 'its wallet is verified by another account' },
    };
  }
  if (claim.source === 'proof') {
    const evidence = decideByEvidence(transfer, candidates);
    const attributed = pending.get(claim.session.id) ?? 0n;
    const claimed = { ...claim.session, received: claim.session.received + attributed };
    if (evidence && outranksProof(evidence, transfer, claimed)) {
      return {
        found: { sessionId: evidence.session.id, method: evidence.method },
        refusedClaim: { kind: 'outranked', method: evidence.method, sessionId: evidence.session.id },
      };
    }
    // Where amount matching stands aside (sessions of two merchants on an address none or both of
    // them verified) the exact due amount of a session still asking for it outranks a proof all
    // the same; the transfer then waits for the merchant, as amount matching would leave it.
    // A session amount matching may not pay (another merchant's, on an address its owner
    // verified) outranks nothing: it cannot block a proof for the owner's session.
    const rival = exactDueElsewhere(transfer, candidates, pending, claimed);
    if (rival) return { refusedClaim: { kind: 'outranked', method: 'amount', sessionId: rival.id } };
    // More than the session owes: the proof binds nothing, and the transfer is matched as if
    // nothing claimed it (the engine's usual rules: over-, under- and late payments unchanged).
    const excess = proofExcess(claimed, BigInt(transfer.amount));
    if (excess) return { found: evidence && { sessionId: evidence.session.id, method: evidence.method }, refusedClaim: { kind: 'misfit', misfit: excess } };
  }
  return { found: { sessionId: claim.session.id, method: 'claim' } };
}

/** A claim's refusal in the claimant's words: names no other session (a session id is its checkout's capability). */
export function publicReasonOf(refusal: ClaimRefusal): string {
  return refusal.kind === 'outranked' ? `its ${refusal.method} pays another payment session` : refusal.misfit;
}
