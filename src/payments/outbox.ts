import type { Sql } from '../store/index.ts';
import { newId } from '../internal/crypto.ts';

/** Event kinds of spec §6.1, plus the documented extras. */
export const EVENT_TYPES = [
  'payment.confirming',
  'payment.confirmed',
  'payment.late_confirmed',
  'payment.underpaid',
  'payment.overpaid',
  'payment.expired',
  'payment.failed',
  // Documented extras (docs/payment-lifecycle.md): every counted transfer became final, and a
  // reorg removed money the session had counted (it moved back).
  'payment.settled',
  'payment.reorged',
  'refund.requested',
  'refund.completed',
  'refund.rejected',
  // Documented extra (docs/security.md): a reorg left a completed refund larger than the
  // payment's confirmed money; the refund now shows `requiresAttention`.
  'refund.flagged',
] as const;
export type EventType = (typeof EVENT_TYPES)[number] | (string & {});

/** The body of every webhook delivery: spec §6.2's envelope plus a stable `id` and `livemode`. */
export interface EventEnvelope {
  id: string;
  event: EventType;
  data: Record<string, unknown>;
  /** ISO 8601 UTC time the event was created (not delivered), so every redelivery is identical. */
  timestamp: string;
  livemode: boolean;
}

/**
 * Writes one event to the outbox on `sql`, which must be the transaction that makes the state
 * change the event reports (docs/architecture.md rule 5): both commit, or neither does.
 * @returns the stored envelope.
 */
export async function appendEvent(
  sql: Sql,
  params: { merchantId: string; livemode: boolean; type: EventType; sessionId?: string | null; refundId?: string | null; data: Record<string, unknown> },
): Promise<EventEnvelope> {
  const id = newId('evt');
  const { rows } = await sql.query<{ created_at: Date }>('SELECT now() AS created_at');
  const envelope: EventEnvelope = {
    id,
    event: params.type,
    data: params.data,
    timestamp: rows[0]!.created_at.toISOString(),
    livemode: params.livemode,
  };
  await sql.query(
    `INSERT INTO events (id, merchant_id, livemode, type, session_id, refund_id, payload, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [id, params.merchantId, params.livemode, params.type, params.sessionId ?? null, params.refundId ?? null, envelope, rows[0]!.created_at],
  );
  return envelope;
}

/** One event for `appendEvents`, written by the transaction that makes the change it reports. */
export interface NewEvent {
  merchantId: string;
  livemode: boolean;
  type: EventType;
  sessionId?: string | null;
  refundId?: string | null;
  data: Record<string, unknown>;
}

/**
 * Writes several events to the outbox on `sql` in one statement, in the order given (their `seq`
 * follows it), all stamped `createdAt`: the transaction's `now()`, read by the caller, as
 * `appendEvent` stamps one. The engine writes the events of a whole evaluation this way instead
 * of two round trips per event.
 */
export async function appendEvents(sql: Sql, events: NewEvent[], createdAt: Date): Promise<EventEnvelope[]> {
  if (events.length === 0) return [];
  const envelopes = events.map(
    (event): EventEnvelope => ({ id: newId('evt'), event: event.type, data: event.data, timestamp: createdAt.toISOString(), livemode: event.livemode }),
  );
  await sql.query(
    `INSERT INTO events (id, merchant_id, livemode, type, session_id, refund_id, payload, created_at)
     SELECT e.id, e.merchant_id, e.livemode, e.type, e.session_id, e.refund_id, e.payload, $8
       FROM unnest($1::text[], $2::text[], $3::boolean[], $4::text[], $5::text[], $6::text[], $7::jsonb[]) WITH ORDINALITY
            AS e (id, merchant_id, livemode, type, session_id, refund_id, payload, n)
      ORDER BY e.n`,
    [
      envelopes.map((envelope) => envelope.id),
      events.map((event) => event.merchantId),
      events.map((event) => event.livemode),
      events.map((event) => event.type),
      events.map((event) => event.sessionId ?? null),
      events.map((event) => event.refundId ?? null),
      envelopes.map((envelope) => JSON.stringify(envelope)),
      createdAt,
    ],
  );
  return envelopes;
}
