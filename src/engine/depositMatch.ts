import { prepared, type Sql } from '../store/index.ts';
import { inWindow, type MatchMethod, type TransferToMatch } from './matchRules.ts';

/*
 * Matching by deposit address (issue 25, docs/payment-lifecycle.md#matching, rule 0): a session in
 * `address` mode has an address of its own, so a transfer to it is that session's, whatever its
 * amount or sender, before any claim, reference or amount rule. And a transfer *from* a deposit
 * address into its session's wallet is the forwarder sweeping a deposit on: the deposit already
 * paid the session, so the sweep pays nothing (`sweep`), and above all is never matched by amount
 * to another session of that wallet (the plain amount of a swept 25.00 deposit may be exactly
 * the due amount of an `amount` mode session there).
 */

/** A session in `address` mode as matching by address reads it. */
interface DepositSession {
  id: string;
  livemode: boolean;
  tokenAddresses: string[];
  payTo: string;
  depositAddress: string;
  createdAt: Date;
  monitorUntil: Date;
}

/** What one batch's transfers have to do with deposit addresses (see {@link readDeposits}). */
export interface BatchDeposits {
  /** The session whose deposit address a transfer pays, by transfer id. */
  paying: Map<bigint, DepositSession>;
  /** Transfers that are sweeps (from a deposit address into its session's wallet), already marked. */
  sweeps: Set<bigint>;
}

const SESSION_FIELDS = `s.id, s.livemode, s.token_addresses AS "tokenAddresses", s.pay_to AS "payTo", s.deposit_address AS "depositAddress",
  s.created_at AS "createdAt", s.monitor_until AS "monitorUntil"`;

/**
 * The `address` mode sessions a batch's transfers pay (recipient) or come from (sender), each
 * found by the unique (chain, deposit_address) index of migration 034: two index probes per
 * transfer, whatever the number of open sessions. $1 transfer ids.
 */
const SELECT_DEPOSITS = `SELECT t.id AS transfer_id, 'to' AS side, ${SESSION_FIELDS}
   FROM transfers t JOIN payment_sessions s ON s.chain = t.chain AND s.deposit_address = t.to_address
  WHERE t.id = ANY($1::bigint[]) AND s.deposit_address IS NOT NULL
  UNION ALL
 SELECT t.id, 'from', ${SESSION_FIELDS}
   FROM transfers t JOIN payment_sessions s ON s.chain = t.chain AND s.deposit_address = t.from_address
  WHERE t.id = ANY($1::bigint[]) AND s.deposit_address IS NOT NULL AND t.to_address = s.pay_to AND t.livemode = s.livemode`;

/** Marks sweeps: kept, attributed to no session, out of amount matching and the unmatched list. $1 transfer ids. */
const MARK_SWEEPS = `UPDATE transfers SET match_method = 'sweep', matched_at = now() WHERE id = ANY($1::bigint[]) AND session_id IS NULL`;

/**
 * Reads, for a batch of transfers being matched (locked by the caller), the deposit addresses they
 * pay and the sweeps among them, and marks the sweeps. One statement when none is either (every
 * `amount` mode batch), two otherwise.
 */
export async function readDeposits(sql: Sql, transfers: readonly TransferToMatch[]): Promise<BatchDeposits> {
  const paying = new Map<bigint, DepositSession>();
  const sweeps = new Set<bigint>();
  const { rows } = await sql.query<DepositSession & { transfer_id: bigint; side: 'to' | 'from' }>(prepared(SELECT_DEPOSITS), [
    transfers.map((transfer) => transfer.id),
  ]);
  for (const row of rows) {
    if (row.side === 'to') paying.set(BigInt(row.transfer_id), row);
    else sweeps.add(BigInt(row.transfer_id));
  }
  // A transfer both into a deposit address and out of another one (a forwarder whose merchant
  // wallet is another session's deposit address) pays the session it reached.
  for (const id of paying.keys()) sweeps.delete(id);
  if (sweeps.size > 0) await sql.query(prepared(MARK_SWEEPS), [[...sweeps]]);
  return { paying, sweeps };
}

/** What {@link decideByDeposit} decided: the session (method `address`), or nothing (decided, unmatched). */
export interface DepositDecision {
  found?: { sessionId: string; method: MatchMethod };
  /** Never set: a deposit address outranks a claim on its transaction without refusing it (the shape of match.ts's decision). */
  refusedClaim?: undefined;
}

/**
 * Rule 0: a transfer to a deposit address pays its session when it is in one of the session's
 * tokens, in its mode, within its window (creation less the clock skew .. end of monitoring), as
 * every rule requires; otherwise it pays nothing (no other session can own that address: it is
 * left for the merchant, and the forwarder still only moves it to the merchant's wallet). A sweep
 * pays nothing. Undefined: the transfer has nothing to do with a deposit address, the other rules
 * decide.
 */
export function decideByDeposit(transfer: TransferToMatch, deposits: BatchDeposits): DepositDecision | undefined {
  if (deposits.sweeps.has(transfer.id)) return {};
  const session = deposits.paying.get(transfer.id);
  if (!session) return undefined;
  const fits = session.livemode === transfer.livemode && session.tokenAddresses.includes(transfer.token_address) && inWindow(session, transfer.paid_at);
  return fits ? { found: { sessionId: session.id, method: 'address' } } : {};
}
