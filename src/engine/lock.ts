import type { Sql } from '../store/index.ts';
import { engineChainLockText } from '../store/lockKeys.ts';

/**
 * Locks one (livemode, chain) for the engine until the transaction ends. Every writer of payment
 * state (reconcile, manual attribution) takes it first, then row locks: one lock order, so no
 * deadlock, and two engine processes never evaluate the same chain at once (no double transition).
 */
export async function lockChain(sql: Sql, params: { livemode: boolean; chain: string }): Promise<void> {
  await sql.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [engineChainLockText(params)]);
}
