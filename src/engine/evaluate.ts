import type { Sql } from '../store/index.ts';
import type { ChainConfig } from '../internal/chains.ts';
import { appendEvents, type EventType, type NewEvent } from '../payments/outbox.ts';
import { confirmationsOf, isConfirmed, isSettled, readChainHead, type ChainHead } from '../ingest/confirmations.ts';
import { nextStep, type SessionFacts } from './decide.ts';
import { paymentEventData, type PaymentView } from './eventData.ts';
import { flagRefundsBeyondConfirmed } from '../payments/refunds.ts';
import type { PaymentStatus, TransitionCause } from '../payments/stateMachine.ts';
import { toSession, type Session } from '../payments/session.ts';
import * as sessionSql from '../payments/sessionSql.ts';

/** Steps one session may take in one evaluation; the longest real path is 3 (confirming -> reorg -> created -> expired). */
const MAX_STEPS = 6;

/** A session as evaluation reads it, with its merchant's tolerance and whether it is past expiry on the database's clock. */
interface EvaluatedSession {
  session: Session;
  pastExpiry: boolean;
  toleranceBps: number;
}

interface CountedTransfer {
  session_id: string;
  tx_hash: string;
  block_number: bigint;
  amount: string;
  paid_at: Date;
}

/** Reports something that must never be silent (metric and error log): a deep reorg, a refund it left uncovered. */
export type Incident = (kind: 'deep_reorg' | 'refund_exceeds_confirmed', sessionId: string) => void;

/** What one evaluation did, for logs, metrics and tests. */
export interface Change {
  sessionId: string;
  from: PaymentStatus;
  to: PaymentStatus;
  cause: TransitionCause | 'notice';
  events: EventType[];
}

/**
 * Sessions of one (livemode, chain) that may need a step: everything in flight, every open
 * session past its expiry or with money counted, and every session at rest (settled, expired,
 * failed) whose transfers changed since it was last evaluated (a late payment, a manual
 * attribution, a reorg: `transfers_changed`, set by migration 021's trigger on `transfers` and
 * cleared by the evaluation that reads them). That is also how a settled session's
 * `amount_confirmed` catches up, since money can reach a settled session only as a duplicate of
 * its due amount. Others are at rest and are not read: each arm is served by a partial index, so
 * a pass costs the sessions in flight, not the history (bench/scale.ts).
 */
const CANDIDATES = `
  s.status IN ('pending', 'confirming', 'confirmed')
  OR (s.status = 'created' AND (s.expires_at <= now() OR EXISTS (SELECT 1 FROM transfers t WHERE t.session_id = s.id AND t.status = 'observed')))
  OR (s.transfers_changed AND s.status IN ('expired', 'failed', 'settled'))`;

/**
 * What the evaluations of one pass write, gathered and sent as two statements (all events, then
 * all session rows) instead of three round trips per session: a backfill moving 2,400 sessions to
 * `confirming` spent most of its time in those round trips. Both are in the caller's
 * transaction, so a state change and its event still commit together (rule 5).
 */
class PendingWrites {
  private events: NewEvent[] = [];
  private saves: { id: string; values: unknown[] }[] = [];

  constructor(
    private readonly sql: Sql,
    private readonly now: Date,
  ) {}

  event(event: NewEvent): void {
    this.events.push(event);
  }

  /** `values`: the session's status read, then `saveEvaluations`' columns $3..$14 for it. */
  save(id: string, values: unknown[]): void {
    this.saves.push({ id, values });
  }

  /** Writes what is gathered; called before any other write of the pass, so `seq` keeps the order of the changes. */
  async flush(): Promise<void> {
    const events = this.events;
    const saves = this.saves;
    this.events = [];
    this.saves = [];
    await appendEvents(this.sql, events, this.now);
    if (saves.length === 0) return;
    const columns = [saves.map((save) => save.id), ...saves[0]!.values.map((_, i) => saves.map((save) => save.values[i]))];
    const { rowCount } = await this.sql.query(sessionSql.saveEvaluations(), columns);
    // The rows are locked FOR UPDATE by the pass, so their status cannot have moved under it.
    if (rowCount !== saves.length) throw new Error(`${saves.length - (rowCount ?? 0)} payment sessions changed status during evaluation`);
  }
}

/**
 * Re-evaluates sessions of one (livemode, chain) in the caller's transaction, which must hold the
 * engine's chain lock: recomputes received totals and live confirmations from the transfers and
 * the chain head, walks the state machine, and writes each state change together with its
 * outbox event. `sessionIds` narrows it to those sessions (manual attribution).
 */
export async function evaluateSessions(
  sql: Sql,
  params: { livemode: boolean; chain: ChainConfig; sessionIds?: string[]; onIncident?: Incident },
): Promise<Change[]> {
  const { livemode, chain } = params;
  const filter = params.sessionIds ? 's.id = ANY($3::text[])' : CANDIDATES;
  const values: unknown[] = [livemode, chain.name];
  if (params.sessionIds) values.push(params.sessionIds);
  const { rows } = await sql.query(sessionSql.lockSessionsToEvaluate(filter), values);
  const sessions: EvaluatedSession[] = rows.map((row) => ({
    session: toSession(row),
    pastExpiry: row.past_expiry as boolean,
    toleranceBps: row.payment_tolerance_bps as number,
  }));
  if (sessions.length === 0) return [];

  const head = await readChainHead(sql, { livemode, chain: chain.name });
  const { rows: transfers } = await sql.query<CountedTransfer>(
    `SELECT session_id, tx_hash, block_number, amount, coalesce(block_time, observed_at) AS paid_at
       FROM transfers WHERE session_id = ANY($1::text[]) AND status = 'observed'
      ORDER BY block_number, log_index, id`,
    [sessions.map(({ session }) => session.id)],
  );
  const bySession = new Map<string, CountedTransfer[]>();
  for (const transfer of transfers) {
    const list = bySession.get(transfer.session_id) ?? [];
    list.push(transfer);
    bySession.set(transfer.session_id, list);
  }
  // Clear the marks read above, after the lock (a transfer change committed later sets it again),
  // but only where every counted transfer is final: confirmations grow with the chain head, not
  // through `transfers`, so a session at rest with money not yet final (an overpayment of a
  // settled session, a late payment of an expired one) is read again on each pass until it is,
  // or its late money would never be reported (test/engine/property.test.ts found it).
  const atRest = rows
    .filter((row) => row.transfers_changed === true)
    .map((row) => row.id as string)
    .filter((id) => (bySession.get(id) ?? []).every((transfer) => isSettled(head, transfer.block_number)));
  if (atRest.length > 0) await sql.query('UPDATE payment_sessions SET transfers_changed = false WHERE id = ANY($1::text[])', [atRest]);
  const { rows: clock } = await sql.query<{ now: Date }>('SELECT now() AS now');
  const now = clock[0]!.now;

  const writes = new PendingWrites(sql, now);
  const changes: Change[] = [];
  for (const evaluated of sessions) {
    changes.push(
      ...(await evaluateOne(sql, {
        ...evaluated,
        counted: bySession.get(evaluated.session.id) ?? [],
        head,
        chain,
        now,
        writes,
        onIncident: params.onIncident,
      })),
    );
  }
  await writes.flush();
  return changes;
}

async function evaluateOne(
  sql: Sql,
  params: EvaluatedSession & { counted: CountedTransfer[]; head: ChainHead; chain: ChainConfig; now: Date; writes: PendingWrites; onIncident?: Incident },
): Promise<Change[]> {
  const { session: row, counted, head, chain, now, writes } = params;
  let received = 0n;
  let confirmedReceived = 0n;
  let unconfirmedCount = 0;
  let confirmations = 0;
  for (const transfer of counted) {
    const amount = BigInt(transfer.amount);
    received += amount;
    if (isConfirmed(chain, head, transfer.block_number, row.requiredConfirmations)) confirmedReceived += amount;
    else unconfirmedCount += 1;
  }
  if (counted.length > 0) confirmations = Math.min(...counted.map((t) => confirmationsOf(head, t.block_number)));
  const newest = counted.at(-1);

  const view: PaymentView & { status: PaymentStatus } = {
    id: row.id,
    livemode: row.livemode,
    status: row.status,
    chain: row.chain,
    currency: row.currency,
    decimals: row.decimals,
    amount: row.amount,
    amountDue: row.amountDue,
    // Confirmed money only; what is counted but not confirmed yet is pending (docs/security.md).
    amountReceived: confirmedReceived,
    amountPending: received - confirmedReceived,
    fee: row.fee,
    payTo: row.payTo,
    depositAddress: row.depositAddress,
    // The newest counted transfer: none once a reorg removed them all (spec: null until one is seen).
    txHash: newest?.tx_hash ?? null,
    confirmations,
    confirmedAt: row.confirmedAt,
    expiresAt: row.expiresAt,
    failureReason: row.failureReason,
    description: row.description,
    lineItems: row.lineItems,
    price: row.price,
    priceQuote: row.priceQuote,
    metadata: row.metadata,
  };
  const stamps = { detected_at: row.detectedAt, confirmed_at: row.confirmedAt, settled_at: row.settledAt, expired_at: row.expiredAt, failed_at: row.failedAt };
  const facts: SessionFacts = {
    status: row.status,
    amountDue: view.amountDue,
    toleranceBps: params.toleranceBps,
    storedReceived: row.amountCounted,
    reportedReceived: row.amountReported,
    received,
    confirmedReceived,
    unconfirmedCount,
    allSettled: counted.length > 0 && counted.every((t) => isSettled(head, t.block_number)),
    pastExpiry: params.pastExpiry,
    expiredBefore: row.expiredAt !== null,
    failedBefore: row.failedAt !== null,
    paidAfterExpiry: newest !== undefined && newest.paid_at > row.expiresAt,
  };

  const storedConfirmed = row.amountReceived;
  const removed = facts.received < facts.storedReceived;
  const details = {
    status: row.status,
    stored_received: String(facts.storedReceived),
    received: String(received),
    stored_confirmed: String(storedConfirmed),
    confirmed: String(confirmedReceived),
  };
  // A removal writes at once below (incidents, flagged refunds): what earlier sessions gathered goes first.
  if (removed) await writes.flush();
  // Confirmed money went away: a reorg deeper than the confirmation rule. Recorded, never hidden.
  // Only confirmed money counts: a second payment to a confirmed session that a shallow reorg
  // removes before it confirmed is an ordinary reorg, not an incident.
  if (removed && confirmedReceived < storedConfirmed && ['confirmed', 'settled', 'failed', 'pending'].includes(row.status)) {
    await sql.query(`INSERT INTO engine_incidents (livemode, chain, session_id, kind, details) VALUES ($1, $2, $3, 'deep_reorg', $4)`, [
      row.livemode,
      row.chain,
      row.id,
      details,
    ]);
    params.onIncident?.('deep_reorg', row.id);
  }
  // A removal (never a mere head move, which only delays confirmation) may leave completed
  // refunds larger than the confirmed money: they are flagged for the merchant.
  if (removed) {
    const flagged = await flagRefundsBeyondConfirmed(sql, { sessionId: row.id, confirmed: confirmedReceived, decimals: row.decimals, currency: row.currency });
    if (flagged.length > 0) {
      await sql.query(`INSERT INTO engine_incidents (livemode, chain, session_id, kind, details) VALUES ($1, $2, $3, 'refund_exceeds_confirmed', $4)`, [
        row.livemode,
        row.chain,
        row.id,
        { ...details, refunds: flagged.map((refund) => refund.id) },
      ]);
      params.onIncident?.('refund_exceeds_confirmed', row.id);
    }
  }

  const changes: Change[] = [];
  for (let i = 0; i < MAX_STEPS; i++) {
    const step = nextStep(facts);
    if (!step) break;
    if (step.kind === 'notice') {
      writes.event({ merchantId: row.merchantId, livemode: row.livemode, type: step.event, sessionId: row.id, data: paymentEventData(view) });
      facts.reportedReceived = facts.confirmedReceived;
      changes.push({ sessionId: row.id, from: facts.status, to: facts.status, cause: 'notice', events: [step.event] });
      continue;
    }
    const { transition } = step;
    view.status = transition.to;
    if (transition.to === 'confirming') stamps.detected_at ??= now;
    if (transition.to === 'confirmed') {
      stamps.confirmed_at = now;
      view.confirmedAt = now;
      facts.reportedReceived = facts.confirmedReceived;
    }
    if (transition.cause === 'deep_reorg') {
      stamps.confirmed_at = null;
      view.confirmedAt = null;
    }
    if (transition.to === 'settled') stamps.settled_at = now;
    if (transition.to === 'expired') stamps.expired_at ??= now;
    if (transition.to === 'failed') {
      stamps.failed_at ??= now;
      view.failureReason = 'underpaid';
    }
    for (const event of step.events) {
      writes.event({ merchantId: row.merchantId, livemode: row.livemode, type: event, sessionId: row.id, data: paymentEventData(view) });
    }
    changes.push({ sessionId: row.id, from: facts.status, to: transition.to, cause: transition.cause, events: step.events });
    facts.status = transition.to;
    facts.storedReceived = facts.received;
    facts.expiredBefore = stamps.expired_at !== null;
    facts.failedBefore = stamps.failed_at !== null;
  }

  const unchanged =
    changes.length === 0 &&
    received === row.amountCounted &&
    confirmedReceived === storedConfirmed &&
    confirmations === row.confirmations &&
    view.txHash === row.txHash;
  if (unchanged) return changes;
  writes.save(row.id, [
    row.status,
    facts.status,
    String(received),
    String(facts.reportedReceived),
    confirmations,
    view.txHash,
    stamps.detected_at,
    stamps.confirmed_at,
    stamps.settled_at,
    stamps.expired_at,
    stamps.failed_at,
    view.failureReason,
    String(confirmedReceived),
  ]);
  return changes;
}
