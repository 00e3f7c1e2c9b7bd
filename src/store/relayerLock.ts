import type { Store } from './index.ts';
import { x402RelayerLockText } from './lockKeys.ts';

/**
 * Holds one chain's relayer lock (lockKeys.ts `x402RelayerLockText`) on a connection of its own,
 * session-level, so a crash releases it: x402 settlements and deposit sweeps sign with the same
 * gas-only key, and each holds this from reading the next nonce until its transaction is recorded
 * and broadcast.
 */
export async function withRelayerLock<T>(store: Store, chain: string, work: () => Promise<T>): Promise<T> {
  const client = await store.pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [x402RelayerLockText(chain)]);
    try {
      return await work();
    } finally {
      await client.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [x402RelayerLockText(chain)]);
    }
  } finally {
    client.release();
  }
}
