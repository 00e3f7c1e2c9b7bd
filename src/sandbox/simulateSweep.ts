import type { Store } from '../store/index.ts';
import type { ChainConfig } from '../internal/chains.ts';
import type { ChainName } from '../internal/config.ts';
import { conflict, notFound } from '../internal/errors.ts';
import { fakeBlockHash, fakeTxHash } from '../internal/sandboxIds.ts';
import { simulatedHead, storeSimulatedHead } from '../ingest/simulatedChain.ts';
import type { Reconcile } from './simulatePayment.ts';

/** What a simulated sweep moved: the deposit address's balance into the merchant's wallet. */
export interface SimulatedSweep {
  txHash: string;
  from: string;
  to: string;
  amount: bigint;
  decimals: number;
  blockNumber: bigint;
}

/** Statuses whose deposits a sweep may move: the money has confirmed (docs/deposit-addresses.md). */
const SWEEPABLE = ['confirmed', 'settled'];

/**
 * Simulates the sweep of a sandbox address-mode session (issue 25): the forwarder moving what the
 * deposit address holds (its deposits less what earlier sweeps moved) into the merchant's wallet,
 * written on the simulated chain as a transfer from the deposit address to the wallet, exactly as
 * the live ingester stores a real sweep. The real engine then marks it `sweep` (depositMatch.ts):
 * it pays nothing and is never matched by amount to another session. Only once the session's
 * money has confirmed, as the live sweeper does.
 * @throws {NotFoundError} unknown or live session; {ConflictError} not address mode, not confirmed, or nothing to sweep.
 */
export async function simulateSweep(params: {
  store: Store;
  chains: Record<ChainName, ChainConfig>;
  blockMs: number;
  reconcile: Reconcile;
  merchantId: string;
  sessionId: string;
}): Promise<SimulatedSweep> {
  const sweep = await params.store.transaction(async (sql) => {
    const { rows } = await sql.query<{ chain: ChainName; status: string; deposit_address: string | null; pay_to: string; token: string; decimals: number }>(
      `SELECT chain, status, deposit_address, pay_to, token_addresses[1] AS token, decimals
         FROM payment_sessions WHERE id = $1 AND merchant_id = $2 AND NOT livemode FOR UPDATE`,
      [params.sessionId, params.merchantId],
    );
    const session = rows[0];
    if (!session) throw notFound(`sandbox session ${params.sessionId} not found`);
    if (!session.deposit_address)
      throw conflict(`sandbox session ${params.sessionId} is in amount mode: its payments went straight to the merchant's wallet, nothing to sweep`);
    if (!SWEEPABLE.includes(session.status))
      throw conflict(`sandbox session ${params.sessionId} is ${session.status}: deposits are swept once they are confirmed`);
    const { rows: balance } = await sql.query<{ held: string }>(
      `SELECT (coalesce(sum(amount) FILTER (WHERE to_address = $2), 0) - coalesce(sum(amount) FILTER (WHERE from_address = $2), 0))::text AS held
         FROM transfers WHERE NOT livemode AND chain = $1 AND status = 'observed' AND token_address = $3 AND (to_address = $2 OR from_address = $2)`,
      [session.chain, session.deposit_address, session.token],
    );
    const amount = BigInt(balance[0]!.held);
    if (amount <= 0n) throw conflict(`the deposit address ${session.deposit_address} holds nothing to sweep (already swept)`);
    const chain = params.chains[session.chain];
    const head = simulatedHead(chain, params.blockMs, Date.now());
    await storeSimulatedHead(sql, chain.name, head);
    const txHash = fakeTxHash(chain.name);
    await sql.query(
      `INSERT INTO transfers (livemode, chain, tx_hash, log_index, block_number, block_hash, block_time, token_address, from_address, to_address, amount, reference_keys)
       VALUES (false, $1, $2, 0, $3, $4, now(), $5, $6, $7, $8::numeric, '{}')`,
      [chain.name, txHash, head.head, fakeBlockHash(chain.name, head.head), session.token, session.deposit_address, session.pay_to, amount.toString()],
    );
    return {
      chain: chain.name,
      result: { txHash, from: session.deposit_address, to: session.pay_to, amount, decimals: session.decimals, blockNumber: head.head },
    };
  });
  await params.reconcile({ chain: sweep.chain, livemode: false });
  return sweep.result;
}
