import type { Sql } from '../store/index.ts';
import type { Owner } from './endpoints.ts';
import { loggedHeaders } from './sign.ts';

/** An outbox event as the events API lists it: the envelope as delivered, plus its links. */
export interface EventRecord {
  id: string;
  event: string;
  data: Record<string, unknown>;
  timestamp: string;
  livemode: boolean;
  paymentId: string | null;
  refundId: string | null;
  createdAt: Date;
  dispatchedAt: Date | null;
}

interface EventRow {
  id: string;
  payload: { event: string; data: Record<string, unknown>; timestamp: string; livemode: boolean };
  session_id: string | null;
  refund_id: string | null;
  created_at: Date;
  dispatched_at: Date | null;
}

const toEvent = (row: EventRow): EventRecord => ({
  id: row.id,
  event: row.payload.event,
  data: row.payload.data,
  timestamp: row.payload.timestamp,
  livemode: row.payload.livemode,
  paymentId: row.session_id,
  refundId: row.refund_id,
  createdAt: row.created_at,
  dispatchedAt: row.dispatched_at,
});

/** Filters of GET /events; `startingAfter` is the id of the last event of the previous page. */
export interface EventFilter {
  type?: string;
  paymentId?: string;
  createdAfter?: Date;
  createdBefore?: Date;
  limit: number;
  startingAfter?: string;
}

/** The owner's events, newest first, one page. */
export async function listEvents(sql: Sql, owner: Owner, filter: EventFilter): Promise<{ data: EventRecord[]; hasMore: boolean }> {
  const { rows } = await sql.query<EventRow>(
    `SELECT id, payload, session_id, refund_id, created_at, dispatched_at FROM events
      WHERE merchant_id = $1 AND livemode = $2
        AND ($3::text IS NULL OR type = $3)
        AND ($4::text IS NULL OR session_id = $4)
        AND ($5::timestamptz IS NULL OR created_at >= $5)
        AND ($6::timestamptz IS NULL OR created_at < $6)
        AND ($7::text IS NULL OR (created_at, seq) < (SELECT created_at, seq FROM events WHERE id = $7 AND merchant_id = $1))
      ORDER BY created_at DESC, seq DESC
      LIMIT $8`,
    [
      owner.merchantId,
      owner.livemode,
      filter.type ?? null,
      filter.paymentId ?? null,
      filter.createdAfter ?? null,
      filter.createdBefore ?? null,
      filter.startingAfter ?? null,
      filter.limit + 1,
    ],
  );
  return { data: rows.slice(0, filter.limit).map(toEvent), hasMore: rows.length > filter.limit };
}

export async function getEvent(sql: Sql, owner: Owner, id: string): Promise<EventRecord | undefined> {
  const { rows } = await sql.query<EventRow>(
    'SELECT id, payload, session_id, refund_id, created_at, dispatched_at FROM events WHERE id = $1 AND merchant_id = $2 AND livemode = $3',
    [id, owner.merchantId, owner.livemode],
  );
  return rows[0] && toEvent(rows[0]);
}

/** One delivery of an event to one target, as GET /events/:id/deliveries shows it. */
export interface DeliveryRecord {
  id: string;
  eventId: string;
  endpointId: string | null;
  url: string;
  origin: 'dispatch' | 'redeliver' | 'replay';
  status: 'pending' | 'succeeded' | 'failed';
  attemptCount: number;
  nextAttemptAt: Date | null;
  lastAttemptAt: Date | null;
  lastResponseStatus: number | null;
  lastError: string | null;
  createdAt: Date;
  completedAt: Date | null;
}

/** Whether `deliveryId` is a delivery to `endpointId` of this owner (a list cursor must be). */
export async function isDeliveryOfEndpoint(sql: Sql, owner: Owner, params: { deliveryId: string; endpointId: string }): Promise<boolean> {
  const { rowCount } = await sql.query('SELECT 1 FROM webhook_deliveries WHERE id = $1 AND endpoint_id = $2 AND merchant_id = $3 AND livemode = $4', [
    params.deliveryId,
    params.endpointId,
    owner.merchantId,
    owner.livemode,
  ]);
  return Boolean(rowCount);
}

/** One delivery of the owner, optionally only if it went to `endpointId`. */
export async function getDelivery(sql: Sql, owner: Owner, id: string, params: { endpointId?: string } = {}): Promise<DeliveryRecord | undefined> {
  const { rows } = await sql.query<{ event_id: string }>(
    'SELECT event_id FROM webhook_deliveries WHERE id = $1 AND merchant_id = $2 AND livemode = $3 AND ($4::text IS NULL OR endpoint_id = $4)',
    [id, owner.merchantId, owner.livemode, params.endpointId ?? null],
  );
  if (!rows[0]) return undefined;
  return (await listDeliveries(sql, owner, { eventId: rows[0].event_id })).find((delivery) => delivery.id === id);
}

/** A page of deliveries, newest first, optionally of one event or one endpoint. */
export async function listDeliveries(
  sql: Sql,
  owner: Owner,
  params: { eventId?: string; endpointId?: string; limit?: number /** Newest first: the ones after this delivery id (a cursor). */; startingAfter?: string },
): Promise<DeliveryRecord[]> {
  const { rows } = await sql.query<Record<string, never>>(
    `SELECT id, event_id, endpoint_id, url, origin, status, attempt_count, next_attempt_at, last_attempt_at, last_response_status, last_error, created_at, completed_at
       FROM webhook_deliveries
      WHERE merchant_id = $1 AND livemode = $2 AND ($3::text IS NULL OR event_id = $3) AND ($4::text IS NULL OR endpoint_id = $4)
        AND ($6::text IS NULL OR (created_at, id) < (SELECT c.created_at, c.id FROM webhook_deliveries c WHERE c.id = $6 AND c.merchant_id = $1 AND c.livemode = $2))
      ORDER BY created_at DESC, id DESC
      LIMIT $5`,
    [owner.merchantId, owner.livemode, params.eventId ?? null, params.endpointId ?? null, params.limit ?? 100, params.startingAfter ?? null],
  );
  return rows.map((row: Record<string, any>) => ({
    id: row.id,
    eventId: row.event_id,
    endpointId: row.endpoint_id,
    url: row.url,
    origin: row.origin,
    status: row.status,
    attemptCount: row.attempt_count,
    nextAttemptAt: row.next_attempt_at,
    lastAttemptAt: row.last_attempt_at,
    lastResponseStatus: row.last_response_status,
    lastError: row.last_error,
    createdAt: row.created_at,
    completedAt: row.completed_at,
  }));
}

/** One logged attempt: the request as sent (less its signature) and what came back. */
export interface AttemptLogRecord {
  id: string;
  deliveryId: string;
  endpointId: string | null;
  url: string;
  attemptNumber: number;
  requestHeaders: Record<string, string>;
  requestBody: string;
  responseStatus: number | null;
  responseBodyExcerpt: string | null;
  error: string | null;
  durationMs: number;
  succeeded: boolean;
  startedAt: Date;
  /** How many signatures X-Service-Signature carried: 2 during a rotation's overlap; null before migration 023. Never their values. */
  signaturesSent: number | null;
}

/** Every attempt made for an event (all its deliveries), oldest first. */
export async function listAttempts(sql: Sql, owner: Owner, eventId: string): Promise<AttemptLogRecord[]> {
  const { rows } = await sql.query<Record<string, any>>(
    // An attempt's body is its event's frozen body; rows from before migration 057 hold a copy.
    `SELECT a.*, coalesce(a.request_body, e.body) AS request_body
       FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
       -- No foreign key since migration 058: an attempt is listed even if its event row were gone.
       LEFT JOIN events e ON e.id = a.event_id
      WHERE a.event_id = $1 AND d.merchant_id = $2 AND d.livemode = $3
      ORDER BY a.started_at, a.attempt_number, a.id`,
    [eventId, owner.merchantId, owner.livemode],
  );
  return rows.map((row) => ({
    id: row.id,
    deliveryId: row.delivery_id,
    endpointId: row.endpoint_id,
    url: row.url,
    attemptNumber: row.attempt_number,
    // Rows from before migration 014 still hold the signature: never hand it out.
    requestHeaders: loggedHeaders(row.request_headers),
    requestBody: row.request_body,
    responseStatus: row.response_status,
    responseBodyExcerpt: row.response_body_excerpt,
    error: row.error,
    durationMs: row.duration_ms,
    succeeded: row.succeeded,
    startedAt: row.started_at,
    signaturesSent: row.signatures_sent,
  }));
}

/**
 * `text` with everything that could be an HMAC-SHA256 signature replaced by `[redacted]`: the
 * `sha256=` form in any case and URL-encoded, any run of exactly 64 hex digits, and any run of
 * 43 base64 or base64url characters (32 bytes). A receiver may echo its request in any of these
 * encodings; redacting too much of a debugging excerpt costs little.
 */
export function redactSignatures(text: string): string {
  return text
    .replace(/sha256(?:=|%3D)[0-9a-f]{64}/gi, 'sha256=[redacted]')
    .replace(/(?<![0-9a-f])[0-9a-f]{64}(?![0-9a-f])/gi, '[redacted]')
    .replace(/(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{43}(?:=|%3D)?(?![A-Za-z0-9+/_-])/g, '[redacted]');
}

/**
 * An attempt as someone may see it, in the API (by key scope) and the dashboard (by role).
 * Nobody gets a signature: a signed request is what a receiver trusts, and one taken from the
 * log could be replayed (or, before migration 014, sandbox signatures verified at live
 * receivers); only how many were sent. Without `seesRequest` (a read-only key, a viewer) it is
 * how it went (timing, status, response excerpt), not the request; with it also the request's
 * headers and body, which are the event it can read anyway. A receiver that echoes its request
 * back could put a signature in the response excerpt: anything shaped like one is redacted.
 */
export function attemptAsShown(attempt: AttemptLogRecord, params: { seesRequest: boolean }) {
  const { requestHeaders, requestBody, responseBodyExcerpt, ...rest } = attempt;
  return {
    ...rest,
    ...(params.seesRequest ? { requestHeaders, requestBody } : {}),
    responseBodyExcerpt: responseBodyExcerpt === null ? null : redactSignatures(responseBodyExcerpt),
  };
}
