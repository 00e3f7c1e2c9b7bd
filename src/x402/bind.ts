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
 * be) is logged, and the transfer is then matched by the usual rules.
 */
export async function bindSettlementTransaction(store: Store, logger: Logger, params: { sessionId: string; chain: ChainName; txHash: string }): Promise<void> {
  try {
    await store.transaction((sql) => claimTransaction(sql, { ...params, source: 'x402' }));
  } catch (error) {
    logger.error({ msg: 'x402 settlement could not be claimed for its session', session: params.sessionId, tx_hash: params.txHash, err: error });
  }
}
