import type { Sql } from '../store/index.ts';
import { LEASE_MS, type ClaimedDelivery } from './types.ts';

interface ClaimRow {
  id: string;
  event_id: string;
  event_type: string;
  merchant_id: string;
  livemode: boolean;
  endpoint_id: string | null;
  url: string;
  attempt_count: number;
  body: string;
  secret_sealed: string;
  event_created_at: Date;
}

/**
 * Leases up to `limit` pending deliveries that are due at `now` and not leased by a live worker
 * (`FOR UPDATE SKIP LOCKED`, so workers in several processes never take the same one), oldest
 * due first.
 */
export async function claimDueDeliveries(sql: Sql, params: { now: Date; limit: number }): Promise<ClaimedDelivery[]> {
  const { rows } = await sql.query<ClaimRow>(
    `WITH due AS (
       SELECT id FROM webhook_deliveries
        WHERE status = 'pending' AND next_attempt_at <= $1 AND (locked_until IS NULL OR locked_until <= $1)
        ORDER BY next_attempt_at
        LIMIT $2
        FOR UPDATE SKIP LOCKED
     ), claimed AS (
       UPDATE webhook_deliveries d SET locked_until = $3 FROM due WHERE d.id = due.id
       RETURNING d.id, d.event_id, d.merchant_id, d.livemode, d.endpoint_id, d.url, d.attempt_count
     )
     SELECT c.*, e.type AS event_type, e.body, e.created_at AS event_created_at,
            coalesce(w.secret_sealed, m.webhook_secret_sealed) AS secret_sealed
       FROM claimed c
       JOIN events e ON e.id = c.event_id
       JOIN merchants m ON m.id = c.merchant_id
       LEFT JOIN webhook_endpoints w ON w.id = c.endpoint_id`,
    [params.now, params.limit, new Date(params.now.getTime() + LEASE_MS)],
  );
  return rows.map((row) => ({
    id: row.id,
    eventId: row.event_id,
    eventType: row.event_type,
    merchantId: row.merchant_id,
    livemode: row.livemode,
    endpointId: row.endpoint_id,
    url: row.url,
    attemptCount: row.attempt_count,
    body: row.body,
    secretSealed: row.secret_sealed,
    eventCreatedAt: row.event_created_at,
  }));
}

/** The earliest time a pending delivery falls due (or its lease runs out), for the idle wait. */
export async function nextDueAt(sql: Sql): Promise<Date | undefined> {
  const { rows } = await sql.query<{ due: Date | null }>(
    `SELECT min(greatest(next_attempt_at, coalesce(locked_until, next_attempt_at))) AS due FROM webhook_deliveries WHERE status = 'pending'`,
  );
  return rows[0]?.due ?? undefined;
}
