/**
 * The audit every chaos run ends with: the chain (anvil's canonical branch at the end), what the
 * merchant's backend was told (acknowledged sessions, payments sent), the database and what the
 * webhook receiver got, checked record by record.
 *
 * Defect kinds (each counted, each a failure unless the run says the kind is its documented RPO):
 * - `transfer.lost`: a Transfer to the wallet on the canonical chain the database does not count;
 * - `transfer.phantom`: a counted transfer that is not on the canonical chain (or has another amount);
 * - `transfer.misattributed`: a payment's transfer attributed to another session than the one it paid, or to none;
 * - `session.lost`: a session the API acknowledged (201) that the database does not have;
 * - `session.wrong`: a paid session not `confirmed`/`settled` with exactly its due amount, or an
 *   unpaid one showing money; `session.confirmed_without_money`: confirmed, money not on chain;
 * - `event.undelivered`: an outbox event the receiver never got; `event.phantom`: a delivered event
 *   id the database does not have; `event.duplicated`: one session's event of one kind under two ids.
 */
import pg from 'pg';
import { parseAbiItem, type Address } from 'viem';
import type { Anvil } from '../../../test/helpers/anvil.ts';
import type { Delivery, PaymentRecord } from './traffic.ts';

export const TRANSFER = parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 value)');

export interface AuditResult {
  counts: Record<string, number>;
  /** The first few examples of each defect kind. */
  examples: Record<string, string[]>;
  figures: Record<string, number>;
}

/** Events a session may carry more than once (a reorg moves it back and forth). */
const REPEATABLE = new Set(['payment.reorged', 'payment.confirming', 'payment.underpaid', 'payment.overpaid']);

export async function auditLedger(params: {
  databaseUrl: string;
  anvil: Anvil;
  token: Address;
  wallet: Address;
  records: PaymentRecord[];
  deliveries: Delivery[];
}): Promise<AuditResult> {
  const counts: Record<string, number> = {};
  const examples: Record<string, string[]> = {};
  const defect = (kind: string, example: string) => {
    counts[kind] = (counts[kind] ?? 0) + 1;
    examples[kind] ??= [];
    if (examples[kind].length < 5) examples[kind].push(example);
  };
  const logs = await params.anvil.client.getLogs({ address: params.token, event: TRANSFER, args: { to: params.wallet }, fromBlock: 0n, toBlock: 'latest' });
  const onChain = new Map<string, bigint>();
  for (const log of logs) onChain.set(`${log.transactionHash!.toLowerCase()}:${log.logIndex}`, log.args.value!);

  const db = new pg.Client({ connectionString: params.databaseUrl });
  await db.connect();
  try {
    const transfers = await db.query<{ tx_hash: string; log_index: number; amount: string; session_id: string | null }>(
      `SELECT tx_hash, log_index, amount::text, session_id FROM transfers WHERE livemode AND chain = 'polygon' AND lower(to_address) = lower($1) AND status = 'observed'`,
      [params.wallet],
    );
    const counted = new Map<string, { amount: bigint; sessionId: string | null; rows: number }>();
    for (const row of transfers.rows) {
      const key = `${row.tx_hash.toLowerCase()}:${row.log_index}`;
      const seen = counted.get(key);
      if (seen) seen.rows++;
      else counted.set(key, { amount: BigInt(row.amount), sessionId: row.session_id, rows: 1 });
    }
    for (const [key, value] of onChain) if (!counted.has(key)) defect('transfer.lost', `${key} (${value})`);
    for (const [key, row] of counted) {
      if (row.rows > 1) defect('transfer.duplicated', key);
      if (onChain.get(key) !== row.amount) defect('transfer.phantom', `${key} (${row.amount}, chain ${onChain.get(key)})`);
    }

    const acknowledged = params.records.filter((record) => record.sessionId);
    const sessions = new Map<string, { status: string; amount_due: string; amount_received: string }>();
    const ids = acknowledged.map((record) => record.sessionId!);
    for (let i = 0; i < ids.length; i += 5_000) {
      const { rows } = await db.query<{ id: string; status: string; amount_due: string; amount_received: string }>(
        'SELECT id, status, amount_due::text, amount_received::text FROM payment_sessions WHERE id = ANY($1)',
        [ids.slice(i, i + 5_000)],
      );
      for (const row of rows) sessions.set(row.id, row);
    }
    const byTx = new Map<string, { key: string; amount: bigint }[]>();
    for (const [key, amount] of onChain) {
      const tx = key.split(':')[0]!;
      byTx.set(tx, [...(byTx.get(tx) ?? []), { key, amount }]);
    }
    let paidOnChain = 0;
    let paidTwice = 0;
    for (const record of acknowledged) {
      const session = sessions.get(record.sessionId!);
      if (!session) {
        defect('session.lost', record.sessionId!);
        continue;
      }
      // Every transaction sent for this payment that is on the canonical chain: a payment a reorg
      // dropped and the run sent again can land twice (anvil may mine the dropped one again), and
      // the session then holds both, as the chain does.
      const hashes = new Set((record.sentHashes ?? (record.txHash ? [record.txHash] : [])).map((hash) => hash.toLowerCase()));
      const landed = [...hashes].flatMap((hash) => byTx.get(hash) ?? []);
      const onChainSum = landed.reduce((sum, { amount }) => sum + amount, 0n);
      if (landed.length > 0) {
        paidOnChain++;
        for (const { key } of landed) {
          const row = counted.get(key);
          if (row && row.sessionId !== record.sessionId) defect('transfer.misattributed', `${key} -> ${row.sessionId} (paid ${record.sessionId})`);
        }
        const paid = ['confirmed', 'settled'].includes(session.status);
        if (!paid || BigInt(session.amount_received) !== onChainSum) {
          defect('session.wrong', `${record.sessionId} ${session.status} received ${session.amount_received} due ${record.due}, on chain ${onChainSum}`);
        }
        if (landed.length > 1) paidTwice++;
      } else {
        // Not paid on the canonical chain (never sent, or a reorg dropped it): no money may show.
        if (['confirmed', 'settled'].includes(session.status)) defect('session.confirmed_without_money', `${record.sessionId} ${session.status}`);
        else if (BigInt(session.amount_received) !== 0n)
          defect('session.wrong', `${record.sessionId} ${session.status} received ${session.amount_received} unpaid`);
      }
    }
    // Any session of the database (not only ours) confirmed with money the chain does not hold.
    const confirmed = await db.query<{ id: string; amount_due: string; received: string | null }>(
      `SELECT s.id, s.amount_due::text, (SELECT sum(t.amount)::text FROM transfers t WHERE t.session_id = s.id AND t.status = 'observed') AS received
         FROM payment_sessions s WHERE s.livemode AND s.status IN ('confirmed', 'settled')`,
    );
    for (const row of confirmed.rows) {
      if (BigInt(row.received ?? '0') < BigInt(row.amount_due)) defect('session.confirmed_without_money', `${row.id} received ${row.received}`);
    }

    const events = await db.query<{ id: string; type: string; session_id: string | null }>(
      'SELECT id, type, session_id FROM events WHERE livemode ORDER BY seq',
    );
    const delivered = new Map<string, number>();
    for (const delivery of params.deliveries) delivered.set(delivery.id, (delivered.get(delivery.id) ?? 0) + 1);
    const stored = new Set(events.rows.map((event) => event.id));
    const kinds = new Map<string, string[]>();
    // A kind seen again after a `payment.reorged` of its session is the session's new story (a
    // reorg deeper than the confirmation rule took confirmed money, then it came back): only a
    // repeat with no reorg between is a duplicate.
    const reorgedSince = new Set<string>();
    const storedByKey = new Map<string, Set<string>>();
    for (const event of events.rows) {
      if (!delivered.has(event.id)) defect('event.undelivered', `${event.id} ${event.type} ${event.session_id}`);
      if (event.session_id && event.type === 'payment.reorged') {
        for (const key of kinds.keys()) if (key.startsWith(`${event.session_id} `)) reorgedSince.add(key);
      } else if (event.session_id && !REPEATABLE.has(event.type)) {
        const key = `${event.session_id} ${event.type}`;
        storedByKey.set(key, new Set([...(storedByKey.get(key) ?? []), event.id]));
        if (reorgedSince.delete(key)) kinds.set(key, [event.id]);
        else kinds.set(key, [...(kinds.get(key) ?? []), event.id]);
      }
    }
    for (const [key, list] of kinds) if (list.length > 1) defect('event.duplicated', `${key}: ${list.join(', ')}`);
    // The same session and kind delivered under two ids, one of them no longer in the database.
    const deliveredKinds = new Map<string, Set<string>>();
    for (const delivery of params.deliveries) {
      if (!stored.has(delivery.id)) defect('event.phantom', `${delivery.id} ${delivery.event} ${delivery.sessionId}`);
      if (delivery.sessionId && !REPEATABLE.has(delivery.event)) {
        const key = `${delivery.sessionId} ${delivery.event}`;
        const set = deliveredKinds.get(key) ?? new Set<string>();
        set.add(delivery.id);
        deliveredKinds.set(key, set);
      }
    }
    // Delivered under an id the database does not hold for that session and kind.
    for (const [key, set] of deliveredKinds)
      if (set.size > 1 && [...set].some((id) => !storedByKey.get(key)?.has(id))) defect('event.duplicated', `${key} delivered as ${[...set].join(', ')}`);
    const figures = {
      chainTransfers: onChain.size,
      countedTransfers: counted.size,
      acknowledgedSessions: acknowledged.length,
      paidOnChain,
      paidTwiceOnChain: paidTwice,
      events: events.rowCount ?? 0,
      deliveries: params.deliveries.length,
      redeliveries: params.deliveries.length - delivered.size,
    };
    return { counts, examples, figures };
  } finally {
    await db.end();
  }
}

/** Prints the audit and returns the defect kinds that fail the run (`allowed` kinds are reported, not failed). */
export function reportAudit(result: AuditResult, allowed: string[] = []): string[] {
  console.log(
    `audit: ${Object.entries(result.figures)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
  );
  const failing: string[] = [];
  for (const [kind, count] of Object.entries(result.counts)) {
    const ok = allowed.includes(kind);
    console.log(`  ${ok ? 'RPO ' : 'DEFECT'} ${kind}: ${count}  e.g. ${result.examples[kind]!.join(' | ')}`);
    if (!ok) failing.push(kind);
  }
  if (Object.keys(result.counts).length === 0) console.log('  0 lost, 0 duplicated, 0 phantom: every record checks');
  return failing;
}
