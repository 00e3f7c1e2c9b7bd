import type { Store } from '../store/index.ts';
import type { ChainName } from '../internal/config.ts';
import type { Logger } from '../internal/logger.ts';
import { claimTransaction } from '../engine/claims.ts';

/**
 * The one call site that binds an x402 settlement's transaction to its session explicitly, so the
 * engine attributes the transfer by the settled transaction, never by its amount: the shared
 * explicit-binding core (`claimTransaction`, source `x402`; docs/payment-lifecycle.md). Called
 * once the relayer's transaction is signed and recorded and before it is broadcast, so the claim
 * is in place before the ingester can store the transfer; claiming again (recovery) is idempotent.
 * A claim refused (the hash claimed by another session, which a fresh relayer transaction cannot
 * be) is logged, and the transfer is then matched by the usual rules. Returns whether the claim
 * holds (bound, or waiting for the ingester).
 */
export async function bindSettlementTransaction(
  store: Store,
  logger: Logger,
  params: { sessionId: string; chain: ChainName; txHash: string; submittedBy?: 'relayer' | 'another' },
): Promise<boolean> {
  // The relayer's own transaction was built for this session and carries exactly its amount. One
  // that another sender got mined first with the same authorization is the payer's money, but
  // nothing in it names this session (an authorization copied from another payment could be
  // offered for any session with that price): it is bound by a payer's proof's rules, never
  // taking another open session's exact due amount (docs/security.md, "Transaction proofs").
  const source = params.submittedBy === 'another' ? 'proof' : 'x402';
  try {
    await store.transaction((sql) => claimTransaction(sql, { sessionId: params.sessionId, chain: params.chain, txHash: params.txHash, source }));
    return true;
  } catch (error) {
    logger.error({ msg: 'x402 settlement could not be claimed for its session', session: params.sessionId, tx_hash: params.txHash, err: error });
    return false;
  }
}
