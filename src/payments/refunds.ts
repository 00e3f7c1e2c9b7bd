import type { Sql } from '../store/index.ts';
import { appendEvent } from './outbox.ts';
import { canonicalAddress } from '../internal/addresses.ts';
import { badRequest, conflict, notFound } from '../internal/errors.ts';
import { newId } from '../internal/crypto.ts';
import { AmountError, formatAmount, parseAmount } from '../internal/money.ts';
import { sessionColumns, toSession, type Session } from './session.ts';
import { selectSession } from './sessionSql.ts';
import { getSessionById } from './sessions.ts';
import { checkReceivingWallet } from './terms.ts';
import { loadChains } from '../internal/chains.ts';
import { refundView, toRefund, type Refund } from './refund.ts';
import type { RefundTransferProof } from './refundVerification.ts';
import * as refundSql from './refundSql.ts';

/**
 * The refund operations, each in the caller's transaction and each writing its `refund.*` event
 * with it: merchants request, complete and reject refunds through the API, payers request them
 * from the checkout page, and the engine flags the ones a reorg left without confirmed money
 * behind them. Refunds are bounded by confirmed money (the session's `amountReceived`).
 */

/** One refund of a merchant and mode (optionally locked); 404 otherwise. */
export async function getRefund(sql: Sql, params: { merchantId: string; livemode: boolean; id: string; forUpdate?: boolean }): Promise<Refund> {
  const { rows } = await sql.query(refundSql.selectRefund({ forUpdate: params.forUpdate }), [params.id, params.merchantId, params.livemode]);
  if (!rows[0]) throw notFound(`refund ${params.id} not found`);
  return toRefund(rows[0]);
}

/** Newest first; optionally one payment's refunds, or those in one state. */
export async function listRefunds(
  sql: Sql,
  params: {
    merchantId: string;
    livemode: boolean;
    paymentId?: string | undefined;
    status?: Refund['status'] | undefined;
    startingAfter?: string | undefined;
    limit: number;
  },
): Promise<Refund[]> {
  const { rows } = await sql.query(refundSql.listRefunds(), [
    params.merchantId,
    params.livemode,
    params.paymentId ?? null,
    params.startingAfter ?? null,
    params.limit,
    params.status ?? null,
  ]);
  return rows.map(toRefund);
}

/**
 * States in which a payment can take refunds. `confirming` (its money may still vanish in a
 * reorg) and `created`/`expired` (nothing received) take none. Within these, refunds are bounded
 * by confirmed money (`amount_confirmed`, the API's `amountReceived`), never by money that is only
 * seen: a second payment to a confirmed session is pending until it confirms.
 */
const REFUNDABLE_STATUSES: readonly Session['status'][] = ['confirmed', 'settled', 'pending', 'failed'];

/** What a refund request reads of its payment. */
const REQUEST_FIELDS = ['chain', 'currency', 'decimals', 'status', 'amountReceived', 'amountPending'] as const satisfies readonly (keyof Session)[];

/** A refund amount: positive decimal text with no more decimals than the token (no minimum: sub-cent remainders can be refunded). */
function parseRefundAmount(text: string, decimals: number): bigint {
  let amount: bigint;
  try {
    amount = parseAmount(text, decimals);
  } catch (error) {
    if (error instanceof AmountError) throw badRequest(error.message);
    throw error;
  }
  if (amount <= 0n) throw badRequest('amount must be greater than 0');
  return amount;
}

/** `12.5 USDC`. */
const money = (units: bigint, session: { decimals: number; currency: string }) => `${formatAmount(units, session.decimals)} ${session.currency}`;

/**
 * Creates a refund request for a payment, on `sql` (a transaction): the session row is locked so
 * concurrent requests cannot together refund more than was received and confirmed. `amount`
 * defaults to all the confirmed money not yet refunded or requested; `address` defaults to the
 * sender of the payment's first counted transfer. Writes `refund.requested` in the same
 * transaction. 409 when what is asked is only covered once pending money confirms.
 */
export async function requestRefund(
  sql: Sql,
  params: {
    merchantId: string;
    livemode: boolean;
    paymentId: string;
    amount?: string | undefined;
    address?: string | undefined;
    reason?: string | undefined;
    metadata?: Record<string, string> | undefined;
  },
): Promise<Refund> {
  const { rows } = await sql.query(selectSession({ columns: sessionColumns(REQUEST_FIELDS), forUpdate: true }), [
    params.paymentId,
    params.merchantId,
    params.livemode,
  ]);
  const session = rows[0] && toSession<(typeof REQUEST_FIELDS)[number]>(rows[0]);
  if (!session) throw notFound(`payment ${params.paymentId} not found`);
  if (!REFUNDABLE_STATUSES.includes(session.status)) {
    // No state names: the route serves both interfaces, and Interface B calls `created` `pending`.
    throw conflict(
      `payment ${params.paymentId} has no confirmed money to refund: refunds are possible once money it received is confirmed (a confirmed, settled or underpaid payment)`,
    );
  }
  const confirmed = session.amountReceived;
  const pending = session.amountPending;
  const refundable = confirmed - (await sumRefunds(sql, params.paymentId, ['requested', 'completed']));
  const pendingNote = `${money(pending, session)} more has been seen on chain but is not confirmed yet; it becomes refundable once it is`;
  if (refundable <= 0n) {
    if (pending > 0n) throw conflict(`payment ${params.paymentId} has no confirmed money left to refund: ${pendingNote}`);
    throw badRequest(
      confirmed === 0n
        ? `payment ${params.paymentId} has received nothing to refund`
        : `payment ${params.paymentId} has nothing left to refund (received ${formatAmount(confirmed, session.decimals)}, all of it already refunded or requested)`,
    );
  }
  let amount = refundable;
  if (params.amount !== undefined) {
    amount = parseRefundAmount(params.amount, session.decimals);
    if (amount > refundable && amount <= refundable + pending) {
      throw conflict(`amount ${params.amount} exceeds the confirmed money that can still be refunded: ${money(refundable, session)}; ${pendingNote}`);
    }
    if (amount > refundable) {
      throw badRequest(`amount ${params.amount} exceeds what can still be refunded: ${money(refundable, session)}`);
    }
  }
  let address: string | undefined;
  if (params.address !== undefined) {
    address = canonicalAddress(session.chain, params.address);
    if (!address) throw badRequest(`address ${JSON.stringify(params.address)} is not a valid ${session.chain} address`);
    // A live refund to an address nobody can spend from burns the customer's money: refused as
    // receiving wallets and the checkout's refund form are. (Sandbox refunds move no money, and
    // the sandbox payer is itself a fake address.)
    if (params.livemode) checkReceivingWallet(loadChains()[session.chain], address, 'address');
  } else {
    const { rows: senders } = await sql.query<{ from_address: string | null }>(refundSql.selectFirstPayer(), [params.paymentId]);
    address = senders[0]?.from_address ? canonicalAddress(session.chain, senders[0].from_address) : undefined;
    if (!address) throw badRequest("address is required: the payer's address is not known for this payment");
  }
  const id = newId('rfd');
  const values = [id, params.merchantId, params.livemode, params.paymentId, amount.toString(), address, params.reason ?? null, params.metadata ?? {}];
  await sql.query(refundSql.insertRefund(), values);
  const refund = await getRefund(sql, { merchantId: params.merchantId, livemode: params.livemode, id });
  await appendRefundEvent(sql, 'refund.requested', refund);
  return refund;
}

/**
 * Marks a requested refund completed with the merchant's refund transaction, once it is verified
 * (`proof`, from refundVerification.ts: the transaction pays this refund on chain); writes
 * `refund.completed`. 409 unless the payment's confirmed money covers every completed refund with
 * this one: checked now, not only at request time, since a reorg may have taken money away. 409
 * too when the transaction's matching transfers already completed other refunds (a hash is not
 * replayed). Locks the session before the refund, in the order requests and the engine use.
 * Callers go through {@link completeRefundVerified} (refundCompletion.ts).
 */
export async function completeRefund(sql: Sql, params: { merchantId: string; livemode: boolean; id: string; proof: RefundTransferProof }): Promise<Refund> {
  const { sessionId } = await getRefund(sql, params);
  const session = (await getSessionById(sql, { id: sessionId, fields: ['status', 'amountReceived'], forUpdate: true }))!;
  const refund = await getRefund(sql, { ...params, forUpdate: true });
  if (params.proof.refundId !== refund.id) throw new Error(`proof of ${params.proof.refundId} used for ${refund.id}`);
  await checkCompletable(sql, refund, session);
  const { txHash } = params.proof;
  // Two refunds completed at once with one hash must not both count its one transfer.
  await sql.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`refund-tx:${refund.chain}:${txHash}`]);
  // A sandbox hash proves nothing about what it pays, so it completes one refund at all.
  const exact = params.proof.verifiedOn === 'chain';
  const { rows } = await sql.query<{ used: number }>(refundSql.countRefundsPaidBy(), [
    refund.livemode,
    refund.chain,
    txHash,
    exact ? refund.toAddress : null,
    exact ? refund.amount.toString() : null,
  ]);
  if (rows[0]!.used >= params.proof.matchingTransfers) {
    throw conflict(
      exact
        ? `transaction ${txHash} already completed another refund of ${money(refund.amount, refund)} to ${refund.toAddress}: one transfer completes one refund`
        : `transaction ${txHash} already completed another refund: a hash completes one refund`,
    );
  }
  await sql.query(refundSql.markRefundCompleted(), [params.id, txHash]);
  const updated = await getRefund(sql, params);
  await appendRefundEvent(sql, 'refund.completed', updated);
  return updated;
}

/**
 * Whether `refund` can be completed now (409 otherwise): it is still requested, and its payment's
 * confirmed money covers the completed refunds plus this one. Checked before reading the chain
 * and again, locked, when completing.
 */
export async function checkCompletable(sql: Sql, refund: Refund, session: Pick<Session, 'status' | 'amountReceived'>): Promise<void> {
  if (refund.status !== 'requested') throw conflict(`refund ${refund.id} is already ${refund.status}`);
  if (!REFUNDABLE_STATUSES.includes(session.status)) {
    throw conflict(
      `refund ${refund.id} can no longer be completed: its payment is ${session.status} and holds less confirmed money than the refunds (a reorg may have removed a transfer)`,
    );
  }
  const confirmed = session.amountReceived;
  const completed = await sumRefunds(sql, refund.sessionId, ['completed']);
  if (completed + refund.amount > confirmed) {
    const left = confirmed > completed ? confirmed - completed : 0n;
    throw conflict(
      `refund ${refund.id} of ${money(refund.amount, refund)} cannot be completed: its payment holds ${money(confirmed, refund)} of confirmed money, ` +
        `${money(completed, refund)} of it already refunded, so at most ${money(left, refund)} more can be (money not confirmed yet counts once it is; a reorg may have removed a transfer)`,
    );
  }
}

/** Declines a requested refund (its amount becomes refundable again); writes `refund.rejected`. */
export async function rejectRefund(sql: Sql, params: { merchantId: string; livemode: boolean; id: string; reason?: string | undefined }): Promise<Refund> {
  const refund = await getRefund(sql, { ...params, forUpdate: true });
  if (refund.status !== 'requested') throw conflict(`refund ${params.id} is already ${refund.status}`);
  await sql.query(refundSql.markRefundRejected(), [params.id, params.reason ?? null]);
  const updated = await getRefund(sql, params);
  await appendRefundEvent(sql, 'refund.rejected', updated);
  return updated;
}

/** Writes a refund event (its data is the refund as the API shows it) in the caller's transaction. */
async function appendRefundEvent(
  sql: Sql,
  type: 'refund.requested' | 'refund.completed' | 'refund.rejected' | 'refund.flagged',
  refund: Refund,
): Promise<void> {
  await appendEvent(sql, {
    merchantId: refund.merchantId,
    livemode: refund.livemode,
    type,
    sessionId: refund.sessionId,
    refundId: refund.id,
    data: refundView(refund),
  });
}

/** The total of one session's refunds in `states`, in base units. */
async function sumRefunds(sql: Sql, sessionId: string, states: readonly Refund['status'][]): Promise<bigint> {
  const { rows } = await sql.query<{ total: string }>(refundSql.sumRefunds(), [sessionId, states]);
  return BigInt(rows[0]!.total);
}

/** The state of every refund of one session, rejected ones included (the checkout counts them). */
export async function refundStatesOf(sql: Sql, sessionId: string): Promise<Refund['status'][]> {
  const { rows } = await sql.query<{ status: Refund['status'] }>(refundSql.selectRefundStates(), [sessionId]);
  return rows.map((row) => row.status);
}

/**
 * Called by the engine, in its transaction with the session row locked, when a reorg removed
 * money a session had counted: if its completed refunds now exceed its confirmed money, every
 * completed refund not flagged yet is flagged (`requiresAttention`, with the reason) and gets a
 * `refund.flagged` event. The merchant sent that money from its own wallet and the payment
 * behind it is gone: only the merchant can recover it, so the gateway says so loudly and
 * changes nothing else. Flags are never cleared.
 * @returns the refunds flagged now (empty when the refunds are still covered).
 */
export async function flagRefundsBeyondConfirmed(
  sql: Sql,
  params: { sessionId: string; confirmed: bigint; decimals: number; currency: string },
): Promise<Refund[]> {
  const completed = await sumRefunds(sql, params.sessionId, ['completed']);
  if (completed <= params.confirmed) return [];
  const text = (units: bigint) => `${formatAmount(units, params.decimals)} ${params.currency}`;
  const reason =
    `a reorg removed money this payment had received: it now holds ${text(params.confirmed)} of confirmed money, ` +
    `less than the ${text(completed)} already refunded; check the payment's transfers and recover the difference from the payer`;
  const { rows } = await sql.query(refundSql.flagCompletedRefunds(), [params.sessionId, reason]);
  const flagged = rows.map(toRefund).sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || a.id.localeCompare(b.id));
  for (const refund of flagged) {
    await appendRefundEvent(sql, 'refund.flagged', refund);
  }
  return flagged;
}
