/**
 * The quiet end of a chaos run: blocks mined past the confirmation rule and finality, then wait
 * until every payment on the canonical chain is `confirmed`/`settled` and every outbox event has
 * reached the receiver (or the timeout passes: the audit then says what is missing).
 */
import pg from 'pg';
import type { Address } from 'viem';
import type { Anvil } from '../../../test/helpers/anvil.ts';
import { TRANSFER } from './ledgerAudit.ts';
import type { Delivery, PaymentRecord } from './traffic.ts';

export async function settle(params: {
  databaseUrl: string;
  anvil: Anvil;
  records: PaymentRecord[];
  deliveries: Delivery[];
  timeoutMs: number;
  /** Blocks mined on top (polygon: 32 to confirm; anvil's finalized tag trails by 64). */
  blocks?: number;
  /**
   * The token and wallet of the run's payments. The sessions expected to confirm are those with a
   * transaction of theirs to `wallet` on the canonical chain once the blocks are mined: a send
   * anvil answered is not always mined (a short chaos-at-scale run had one of 600 that never
   * landed), and that session rightly stays unpaid, counted in `unmined`.
   */
  token: Address;
  wallet: Address;
}): Promise<{ ms: number; pendingSessions: number; undeliveredEvents: number; unmined: number }> {
  const started = performance.now();
  const blocks = params.blocks ?? 100;
  for (let i = 0; i < blocks; i += 10) {
    await mineRetrying(params.anvil, 10);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const db = new pg.Client({ connectionString: params.databaseUrl });
  await db.connect();
  const landed = new Set(
    (await params.anvil.client.getLogs({ address: params.token, event: TRANSFER, args: { to: params.wallet }, fromBlock: 0n, toBlock: 'latest' })).map((log) =>
      log.transactionHash!.toLowerCase(),
    ),
  );
  const sent = params.records.filter((record) => record.sessionId && record.txHash);
  const onChain = sent.filter((record) => [record.txHash!, ...(record.sentHashes ?? [])].some((hash) => landed.has(hash.toLowerCase())));
  const paid = onChain.map((record) => record.sessionId!);
  let pendingSessions = 0;
  let undeliveredEvents = 0;
  try {
    const deadline = Date.now() + params.timeoutMs;
    for (;;) {
      const { rows } = await db.query<{ n: string }>(
        `SELECT count(*)::text AS n FROM payment_sessions WHERE id = ANY($1) AND status NOT IN ('confirmed', 'settled')`,
        [paid],
      );
      pendingSessions = Number(rows[0]!.n);
      const delivered = new Set(params.deliveries.map((delivery) => delivery.id));
      const events = await db.query<{ id: string }>('SELECT id FROM events WHERE livemode');
      undeliveredEvents = events.rows.filter((event) => !delivered.has(event.id)).length;
      if ((pendingSessions === 0 && undeliveredEvents === 0) || Date.now() > deadline) break;
      // Keep the chain moving: confirmations and finality need new blocks.
      await params.anvil.mine(1).catch(() => {});
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  } finally {
    await db.end();
  }
  return { ms: performance.now() - started, pendingSessions, undeliveredEvents, unmined: sent.length - onChain.length };
}

/**
 * Mines `blocks`, asking again when anvil does not answer in time: after a long run on a loaded
 * machine one `anvil_mine` can pass viem's 10 s timeout (a 10,000-payment run failed its settle on
 * that, the payments all made). Gives up after 10 tries.
 */
async function mineRetrying(anvil: Anvil, blocks: number): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await anvil.mine(blocks);
      return;
    } catch (error) {
      if (attempt >= 10) throw error;
      await new Promise((resolve) => setTimeout(resolve, 2_000));
    }
  }
}
