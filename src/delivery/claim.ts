import { prepared, type Sql } from '../store/index.ts';
import { claimable, leasesInFlight, targetSecretColumns, targetSecretJoins } from './targetSql.ts';
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
  secret_sealed: string | null;
  previous_secret_sealed: string | null;
  event_created_at: Date;
}

/**
 * Leases up to `limit` pending deliveries that are due at `now` and not leased by a live worker
 * (`FOR UPDATE SKIP LOCKED`, so workers in several processes never take the same one), oldest
 * due first, and at most `perTarget` leased per target (endpoint, or session URL) across all
 * workers: a slow or dead receiver with a backlog cannot take every slot and hold up other
 * merchants' webhooks. (The worker passes twice its per-target HTTP cap: a lease lasts until the
 * outcome is recorded, the HTTP slot only until the answer; see createDelivery.) (A soft cap: two workers claiming at the same instant may pass it a little.)
 * Each comes with the secrets that sign it at `now`: the target's current one and, during a
 * rotation's overlap, the one it replaced.
 *
 * The cost follows the targets and the cap, not the queue (migration 020's indexes): the distinct
 * targets with pending deliveries come from a skip scan (one index probe each), and each target
 * gives its oldest due unleased deliveries up to the cap less what it has in flight. Ranking the
 * whole queue on every claim made a backlog of 5,000 cost 28 ms per claim, most of the time of
 * draining it.
 *
 * The lease is committed with `synchronous_commit = off`, set by the statement itself for its
 * own transaction (`set_config(..., true)`), so a claim is one round trip whether or not the
 * caller wraps it in a transaction: a lease only keeps other workers away while this one sends. If Postgres crashes before the lease reaches the disk (at most a
 * few hundred milliseconds, or until any later durable commit flushes it), the delivery is
 * simply unleased after recovery and may be sent again by another worker: a duplicate, which
 * at-least-once delivery already allows (receivers deduplicate by event id), never a loss. Every
 * attempt and outcome is still committed durably (record.ts).
 */
export async function claimDueDeliveries(sql: Sql, params: { now: Date; limit: number; perTarget?: number }): Promise<ClaimedDelivery[]> {
  const { rows } = await sql.query<ClaimRow>(
    `WITH RECURSIVE targets AS (
       (SELECT coalesce(endpoint_id, url) AS target_key FROM webhook_deliveries WHERE status = 'pending' ORDER BY 1 LIMIT 1)
       UNION ALL
       SELECT (SELECT coalesce(d.endpoint_id, d.url) FROM webhook_deliveries d
                WHERE d.status = 'pending' AND coalesce(d.endpoint_id, d.url) > t.target_key ORDER BY 1 LIMIT 1)
         FROM targets t WHERE t.target_key IS NOT NULL
     ), candidates AS (
       SELECT c.id FROM targets t
        CROSS JOIN LATERAL (SELECT (${leasesInFlight('t.target_key', '$1')}) AS n) busy
        CROSS JOIN LATERAL (
          SELECT c.id FROM webhook_deliveries c
           WHERE ${claimable('c', 't.target_key', '$1')}
           ORDER BY c.next_attempt_at, c.id
           LIMIT greatest(0, $4 - busy.n)
        ) c
        WHERE t.target_key IS NOT NULL
     ), due AS (
       -- Every condition of a claimable row again, due time included: a row another worker
       -- claimed, attempted and rescheduled since this statement's snapshot is re-checked here
       -- on its new version (READ COMMITTED's recheck of a locked row), not in candidates.
       -- test/delivery/claimRecheck.test.ts holds a claim in that window (reschedule, lease).
       SELECT d.id FROM webhook_deliveries d
        WHERE d.id IN (SELECT id FROM candidates)
          AND d.status = 'pending' AND d.next_attempt_at <= $1 AND (d.locked_until IS NULL OR d.locked_until <= $1)
        ORDER BY d.next_attempt_at
        LIMIT $2
        FOR UPDATE SKIP LOCKED
     ), claimed AS (
       UPDATE webhook_deliveries d SET locked_until = $3 FROM due WHERE d.id = due.id
       RETURNING d.id, d.event_id, d.merchant_id, d.livemode, d.endpoint_id, d.url, d.attempt_count
     )
     SELECT c.*, e.type AS event_type, e.body, e.created_at AS event_created_at, ${targetSecretColumns('c', '$1')}
       FROM claimed c
       -- Evaluated whenever a delivery is claimed (nothing to commit otherwise), before the commit reads it.
       CROSS JOIN (SELECT set_config('synchronous_commit', 'off', true)) AS lease_commit
       JOIN events e ON e.id = c.event_id
       ${targetSecretJoins('c')}`,
    [params.now, params.limit, new Date(params.now.getTime() + LEASE_MS), params.perTarget ?? params.limit],
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
    previousSecretSealed: row.previous_secret_sealed,
    eventCreatedAt: row.event_created_at,
  }));
}

/**
 * The earliest time a pending delivery falls due (or its lease runs out), for the idle wait: the
 * earliest unleased one (the due index in order, up to the first unleased row) and the leased
 * ones (migration 020's small index), so a backlog is not read whole.
 */
export async function nextDueAt(sql: Sql): Promise<Date | undefined> {
  const { rows } = await sql.query<{ due: Date | null }>(NEXT_DUE);
  return rows[0]?.due ?? undefined;
}

// Prepared: no parameters, so its one plan is the custom one. The claim above stays a text
// statement, planned at every call: its generic plan was measured 9x slower (src/store/prepared.ts).
const NEXT_DUE = prepared(
  `SELECT least(
       (SELECT next_attempt_at FROM webhook_deliveries WHERE status = 'pending' AND locked_until IS NULL ORDER BY next_attempt_at LIMIT 1),
       (SELECT min(greatest(next_attempt_at, locked_until)) FROM webhook_deliveries WHERE status = 'pending' AND locked_until IS NOT NULL)
     ) AS due`,
);
