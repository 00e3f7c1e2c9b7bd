/**
 * SQL the claim (claim.ts) and dispatch's own leases (dispatch.ts) share, so both count a
 * target's leases and see a claimable delivery the same way. A target is an endpoint, or a
 * session's webhookUrl: `coalesce(endpoint_id, url)`, the key of migration 020's indexes.
 */

/** The count of `key`'s deliveries leased to a live worker at `now` (webhook_deliveries_leased). */
export function leasesInFlight(key: string, now: string): string {
  return `SELECT count(*) FROM webhook_deliveries b
           WHERE b.status = 'pending' AND b.locked_until IS NOT NULL AND coalesce(b.endpoint_id, b.url) = ${key} AND b.locked_until > ${now}`;
}

/** Row `row` is a delivery of `key` a worker may take at `now`: pending, due, not leased by a live worker (webhook_deliveries_target_due). */
export function claimable(row: string, key: string, now: string): string {
  return `${row}.status = 'pending' AND coalesce(${row}.endpoint_id, ${row}.url) = ${key}
             AND ${row}.next_attempt_at <= ${now} AND (${row}.locked_until IS NULL OR ${row}.locked_until <= ${now})`;
}

/**
 * The signing secrets of a delivery's target, as SQL over a row `d` of deliveries (endpoint_id,
 * merchant_id, livemode): a registered endpoint's own secret, or for a session's webhookUrl the
 * merchant's secret of the delivery's mode; and, during a rotation's overlap (before its expiry,
 * `$now`), the secret it replaced. Shared by the claim and by dispatch's own leases, which both
 * hand deliveries straight to an attempt.
 */
export function targetSecretColumns(row: string, now: string): string {
  return `CASE WHEN ${row}.endpoint_id IS NULL THEN s.secret_sealed ELSE w.secret_sealed END AS secret_sealed,
          CASE WHEN ${row}.endpoint_id IS NULL THEN (CASE WHEN s.previous_expires_at > ${now} THEN s.previous_secret_sealed END)
               ELSE (CASE WHEN w.previous_secret_expires_at > ${now} THEN w.previous_secret_sealed END) END AS previous_secret_sealed`;
}

/** The joins `targetSecretColumns` reads (aliases `w` and `s`). */
export function targetSecretJoins(row: string): string {
  return `LEFT JOIN webhook_endpoints w ON w.id = ${row}.endpoint_id
       -- A session's webhookUrl: the merchant's secret of the delivery's own mode.
       LEFT JOIN merchant_webhook_secrets s ON ${row}.endpoint_id IS NULL AND s.merchant_id = ${row}.merchant_id AND s.livemode = ${row}.livemode`;
}
