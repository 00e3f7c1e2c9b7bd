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
