import type { Sql } from '../store/index.ts';
import { newWebhookSecret, type SecretBox } from '../internal/crypto.ts';

export { newWebhookSecret };

/**
 * Longest time a rotated secret keeps signing beside the new one (Stripe's limit: 24 h). Long
 * enough to deploy the new secret to every receiver; short enough that a leaked secret that
 * was rotated away stops working within a day.
 */
export const MAX_ROTATION_OVERLAP_SECONDS = 86_400;

/** Overlap when a rotation does not say: the longest, so no receiver misses a delivery. */
export const DEFAULT_ROTATION_OVERLAP_SECONDS = MAX_ROTATION_OVERLAP_SECONDS;

/** Whose secret: a merchant's secret for per-session webhookUrl deliveries of one mode. */
export interface SecretOwner {
  merchantId: string;
  livemode: boolean;
}

/** The state of a merchant's per-mode secret, as the API shows it (never the secret). */
export interface MerchantSecretInfo {
  livemode: boolean;
  createdAt: Date;
  rotatedAt: Date | null;
  /** When the replaced secret stops signing; null when only one secret signs. */
  previousSecretExpiresAt: Date | null;
}

interface InfoRow {
  livemode: boolean;
  created_at: Date;
  rotated_at: Date | null;
  previous_expires_at: Date | null;
}

const toInfo = (row: InfoRow, now: Date): MerchantSecretInfo => ({
  livemode: row.livemode,
  createdAt: row.created_at,
  rotatedAt: row.rotated_at,
  previousSecretExpiresAt: row.previous_expires_at && row.previous_expires_at > now ? row.previous_expires_at : null,
});

/**
 * The sealed current secret of `owner`, made now if it has none: merchants created before
 * migration 014 have no sandbox secret until the first sandbox delivery or rotation needs one.
 */
export async function ensureMerchantSecret(sql: Sql, box: SecretBox, owner: SecretOwner): Promise<string> {
  await sql.query(
    `INSERT INTO merchant_webhook_secrets (merchant_id, livemode, secret_sealed) VALUES ($1, $2, $3)
     ON CONFLICT (merchant_id, livemode) DO NOTHING`,
    [owner.merchantId, owner.livemode, box.seal(newWebhookSecret())],
  );
  const { rows } = await sql.query<{ secret_sealed: string }>('SELECT secret_sealed FROM merchant_webhook_secrets WHERE merchant_id = $1 AND livemode = $2', [
    owner.merchantId,
    owner.livemode,
  ]);
  return rows[0]!.secret_sealed;
}

/** The state of `owner`'s secret at `now`; undefined when it has none yet (see ensureMerchantSecret). */
export async function getMerchantSecretInfo(sql: Sql, owner: SecretOwner, now = new Date()): Promise<MerchantSecretInfo | undefined> {
  const { rows } = await sql.query<InfoRow>(
    'SELECT livemode, created_at, rotated_at, previous_expires_at FROM merchant_webhook_secrets WHERE merchant_id = $1 AND livemode = $2',
    [owner.merchantId, owner.livemode],
  );
  return rows[0] && toInfo(rows[0], now);
}

/**
 * Replaces `owner`'s secret with a new one, returned here once. With `expiresInSeconds` > 0
 * the replaced secret keeps signing (a second signature on every delivery) for that long; 0
 * stops it at once. At most two secrets sign: a secret still overlapping from an earlier
 * rotation stops now. The merchant must exist.
 */
export async function rotateMerchantSecret(
  sql: Sql,
  box: SecretBox,
  owner: SecretOwner,
  params: { expiresInSeconds: number },
): Promise<{ info: MerchantSecretInfo; secret: string }> {
  const secret = newWebhookSecret();
  const { rows } = await sql.query<InfoRow & { now: Date }>(
    `INSERT INTO merchant_webhook_secrets AS s (merchant_id, livemode, secret_sealed, rotated_at) VALUES ($1, $2, $3, now())
     ON CONFLICT (merchant_id, livemode) DO UPDATE SET
       previous_secret_sealed = CASE WHEN $4 > 0 THEN s.secret_sealed END,
       previous_expires_at = CASE WHEN $4 > 0 THEN now() + make_interval(secs => $4) END,
       secret_sealed = EXCLUDED.secret_sealed,
       rotated_at = now()
     RETURNING livemode, created_at, rotated_at, previous_expires_at, now() AS now`,
    [owner.merchantId, owner.livemode, box.seal(secret), params.expiresInSeconds],
  );
  return { info: toInfo(rows[0]!, rows[0]!.now), secret };
}
