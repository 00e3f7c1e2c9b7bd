import type { Sql } from '../store/index.ts';
import type { ChainName } from '../internal/config.ts';

/**
 * The one call site that binds a settled x402 transfer to its session explicitly, so the engine
 * attributes it by the settled transaction and not by its amount.
 *
 * The binding itself is the engine's shared explicit-binding core (`claimTransaction` in
 * src/engine/claims.ts, built with `POST /checkout/{id}/transactions`), which is not on this
 * branch yet. Until it is, the transfer is attributed the usual way: its value is the session's
 * unique due amount to the session's wallet, which the amount matcher pins to this session alone
 * (docs/payment-lifecycle.md#matching). When claims land, this function calls
 * `claimTransaction(sql, { sessionId, chain, txHash, source: 'x402' })` and nothing else changes.
 */
export async function bindSettledTransaction(_sql: Sql, _params: { sessionId: string; chain: ChainName; txHash: string }): Promise<void> {}
