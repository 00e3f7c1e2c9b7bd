import type { Sql, Store } from '../store/index.ts';
import type { Refund } from './refund.ts';
import { checkCompletable, completeRefund, getRefund } from './refunds.ts';
import { getSessionById } from './sessions.ts';
import { canonicalTxHash, sandboxRefundProof, verifyRefundTransaction } from './refundVerification.ts';
import type { TransactionLookups } from '../ingest/lookup.ts';

/**
 * Completes a refund by the hash of the merchant's refund transaction, verified on chain first
 * (refundVerification.ts): the one way the API's `POST /refunds/{id}/complete` and the dashboard
 * complete a refund. The chain is read outside any transaction (an RPC call must not hold the
 * payment's row lock); the refund is then completed in one transaction that checks everything
 * again under lock, with `inTransaction` (the API's idempotency record, the dashboard's audit
 * entry) committed with it. Nothing changes when any check refuses.
 */
export async function completeRefundVerified(
  store: Store,
  lookups: TransactionLookups,
  params: { merchantId: string; livemode: boolean; id: string; txHash: string },
  inTransaction?: (sql: Sql, refund: Refund) => Promise<void>,
): Promise<Refund> {
  const refund = await getRefund(store, params);
  const txHash = canonicalTxHash(refund.chain, params.txHash);
  const payment = (await getSessionById(store, { id: refund.sessionId, fields: ['status', 'amountReceived', 'payTo', 'tokenAddresses'] }))!;
  await checkCompletable(store, refund, payment);
  const proof = refund.livemode ? await verifyRefundTransaction(store, lookups, refund, payment, txHash) : sandboxRefundProof(refund, txHash);
  return store.transaction(async (sql) => {
    const completed = await completeRefund(sql, { merchantId: params.merchantId, livemode: params.livemode, id: params.id, proof });
    await inTransaction?.(sql, completed);
    return completed;
  });
}
