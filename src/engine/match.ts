import type { Sql } from '../store/index.ts';
import { sessionColumns, toSession } from '../payments/session.ts';
import * as sessionSql from '../payments/sessionSql.ts';
import { CANDIDATE_FIELDS, CLOCK_SKEW_SECONDS, byAge, type Candidate, type MatchMethod, type TransferToMatch } from './matchRules.ts';
import { chooseOnWallet, indexWallets, type WalletSessions } from './walletCandidates.ts';

export { CLOCK_SKEW_SECONDS, chooseSession, type Candidate, type MatchMethod, type TransferToMatch } from './matchRules.ts';

const CANDIDATE_COLUMNS = `${sessionColumns(CANDIDATE_FIELDS)}, m.payment_tolerance_bps AS "toleranceBps",
  (SELECT coalesce(sum(t.amount), 0) FROM transfers t WHERE t.session_id = s.id AND t.status = 'observed')::text AS received`;

const parseCandidate = (row: Record<string, unknown>): Candidate => ({
  ...toSession<(typeof CANDIDATE_FIELDS)[number]>(row),
  toleranceBps: row.toleranceBps as number,
  received: BigInt(row.received as string),
});

/**
 * The sessions a batch of transfers can pay, read once for the whole batch: the sessions their
 * reference keys name, and every session on their wallets whose window overlaps the batch's
 * payment times. Reading per batch rather than per transfer keeps matching linear: a merchant
 * with thousands of open sessions on one wallet costs one read of them per batch (`MATCH_BATCH`
 * transfers), not one per transfer, and `walletCandidates.ts` indexes them for the rules.
 * `received` is the live sum of each session's counted transfers at the time of the read;
 * matching adds what it attributes in the batch (`pending`).
 */
async function readCandidates(
  sql: Sql,
  transfers: TransferToMatch[],
): Promise<{ byReference: Map<string, Candidate[]>; byWallet: Map<string, WalletSessions> }> {
  const references = [...new Set(transfers.flatMap((transfer) => transfer.reference_keys))];
  const byReference = new Map<string, Candidate[]>();
  if (references.length > 0) {
    const { rows } = await sql.query(sessionSql.selectSessionsByReference(CANDIDATE_COLUMNS), [references]);
    for (const row of rows.map((row) => ({ ...parseCandidate(row), reference: row.reference as string })).sort(byAge)) {
      const list = byReference.get(row.reference);
      if (list) list.push(row);
      else byReference.set(row.reference, [row]);
    }
  }
  const first = transfers[0]!;
  const times = transfers.map((transfer) => transfer.paid_at.getTime());
  const { rows } = await sql.query(sessionSql.selectSessionsOnWallets(CANDIDATE_COLUMNS), [
    first.livemode,
    first.chain,
    [...new Set(transfers.map((transfer) => transfer.to_address))],
    new Date(Math.min(...times)),
    new Date(Math.max(...times)),
    CLOCK_SKEW_SECONDS,
  ]);
  return { byReference, byWallet: indexWallets(rows.map(parseCandidate)) };
}

/**
 * The session `transfer` pays, by the documented rules (see `chooseSession`), given the batch's
 * candidates and what this batch has already attributed to each session (`pending`).
 */
function decide(
  transfer: TransferToMatch,
  candidates: Awaited<ReturnType<typeof readCandidates>>,
  pending: ReadonlyMap<string, bigint>,
): { sessionId: string; method: MatchMethod } | undefined {
  if (transfer.reference_keys.length > 0) {
    const sessions = [...new Map(transfer.reference_keys.flatMap((key) => candidates.byReference.get(key) ?? []).map((row) => [row.id, row])).values()];
    // One credit naming two sessions (one transaction paying two invoices into one token
    // account: the balance shows only the sum): which session gets what cannot be told, and
    // guessing would overpay one and leave the other unpaid. It waits for the merchant.
    if (sessions.length > 1) return undefined;
    const named = sessions[0];
    if (named) {
      // The reference names one session: if the money went to another wallet, token or chain it
      // does not pay that session, and guessing another one would be wrong.
      const fits =
        named.livemode === transfer.livemode &&
        named.chain === transfer.chain &&
        named.payTo === transfer.to_address &&
        named.tokenAddresses.includes(transfer.token_address) &&
        transfer.paid_at <= named.monitorUntil;
      return fits ? { sessionId: named.id, method: 'reference' } : undefined;
    }
  }
  const wallet = candidates.byWallet.get(transfer.to_address);
  const chosen = wallet && chooseOnWallet(wallet, transfer, pending);
  return chosen && { sessionId: chosen.id, method: 'amount' };
}

/**
 * Matches up to `limit` transfers of one (livemode, chain) that no matching has looked at yet,
 * oldest block first, in the caller's transaction (which holds the engine's chain lock). Each
 * transfer is decided once: matched to one session, or marked checked and left unmatched for the
 * merchant to attribute by hand. Transfers are decided in order, each seeing what the earlier
 * ones in the batch paid, exactly as if each were matched in a transaction of its own; the whole
 * batch costs four queries.
 */
export async function matchTransfers(
  sql: Sql,
  params: { livemode: boolean; chain: string; limit: number },
): Promise<{ seen: number; matched: number; unmatched: number }> {
  const { rows } = await sql.query<TransferToMatch>(
    `SELECT id, livemode, chain, token_address, to_address, amount, reference_keys, coalesce(block_time, observed_at) AS paid_at
       FROM transfers
      WHERE livemode = $1 AND chain = $2 AND match_checked_at IS NULL AND status = 'observed' AND session_id IS NULL
      ORDER BY block_number, log_index, id
      LIMIT $3
      FOR UPDATE`,
    [params.livemode, params.chain, params.limit],
  );
  if (rows.length === 0) return { seen: 0, matched: 0, unmatched: 0 };
  const candidates = await readCandidates(sql, rows);
  const pending = new Map<string, bigint>();
  const decided = rows.map((transfer) => {
    const found = decide(transfer, candidates, pending);
    if (found) pending.set(found.sessionId, (pending.get(found.sessionId) ?? 0n) + BigInt(transfer.amount));
    return { id: transfer.id, found };
  });
  const matched = decided.filter((entry) => entry.found);
  if (matched.length > 0) {
    await sql.query(
      `UPDATE transfers t SET session_id = d.session_id, match_method = d.method, matched_at = now(), match_checked_at = now()
         FROM unnest($1::bigint[], $2::text[], $3::text[]) AS d(id, session_id, method) WHERE t.id = d.id`,
      [matched.map((entry) => entry.id), matched.map((entry) => entry.found!.sessionId), matched.map((entry) => entry.found!.method)],
    );
  }
  const unmatched = decided.filter((entry) => !entry.found).map((entry) => entry.id);
  if (unmatched.length > 0) await sql.query('UPDATE transfers SET match_checked_at = now() WHERE id = ANY($1::bigint[])', [unmatched]);
  return { seen: rows.length, matched: matched.length, unmatched: unmatched.length };
}
