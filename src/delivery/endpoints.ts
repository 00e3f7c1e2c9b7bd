import type { Sql } from '../store/index.ts';
import type { SecretBox } from '../internal/crypto.ts';
import { newId } from '../internal/crypto.ts';
import { newWebhookSecret } from './secrets.ts';
import { ConflictError } from '../internal/errors.ts';

/** A webhook endpoint registered with POST /webhooks, as the API shows it (never its secret). */
export interface WebhookEndpoint {
  id: string;
  merchantId: string;
  livemode: boolean;
  url: string;
  description: string | null;
  /** Event kinds delivered here; `['*']` is every kind. */
  enabledEvents: string[];
  status: 'enabled' | 'disabled';
  disabledReason: string | null;
  disabledAt: Date | null;
  failingSince: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

interface EndpointRow {
  id: string;
  merchant_id: string;
  livemode: boolean;
  url: string;
  description: string | null;
  enabled_events: string[];
  status: 'enabled' | 'disabled';
  disabled_reason: string | null;
  disabled_at: Date | null;
  failing_since: Date | null;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = 'id, merchant_id, livemode, url, description, enabled_events, status, disabled_reason, disabled_at, failing_since, created_at, updated_at';

const toEndpoint = (row: EndpointRow): WebhookEndpoint => ({
  id: row.id,
  merchantId: row.merchant_id,
  livemode: row.livemode,
  url: row.url,
  description: row.description,
  enabledEvents: row.enabled_events,
  status: row.status,
  disabledReason: row.disabled_reason,
  disabledAt: row.disabled_at,
  failingSince: row.failing_since,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
});

/** Whose endpoints: every read and write is confined to one merchant's one mode. */
export interface Owner {
  merchantId: string;
  livemode: boolean;
}

/**
 * Most endpoints (not deleted) one merchant may have in one mode, as Stripe's 16: each event is
 * sent once per endpoint, so this bounds what one key can make the gateway send per event.
 */
export const MAX_ENDPOINTS_PER_MODE = 16;

/** Refused registration: the owner already has MAX_ENDPOINTS_PER_MODE endpoints in this mode. */
export class TooManyEndpointsError extends ConflictError {
  override name = 'TooManyEndpointsError';
  constructor(livemode: boolean) {
    super(`this account already has ${MAX_ENDPOINTS_PER_MODE} ${livemode ? 'live' : 'sandbox'} webhook endpoints, the most allowed: delete one first`);
  }
}

/**
 * Registers an endpoint; its signing secret is returned here once and stored sealed. Run in a
 * transaction: the count and the insert are serialised per owner (an advisory lock), so two
 * registrations at once cannot pass the cap together.
 * @throws {TooManyEndpointsError} at MAX_ENDPOINTS_PER_MODE endpoints.
 */
export async function createEndpoint(
  sql: Sql,
  box: SecretBox,
  params: Owner & { url: string; description?: string | null; enabledEvents?: string[] },
): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
  await sql.query("SELECT pg_advisory_xact_lock(hashtextextended('webhook_endpoints:' || $1 || ':' || $2::text, 0))", [params.merchantId, params.livemode]);
  const { rows: counted } = await sql.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM webhook_endpoints WHERE merchant_id = $1 AND livemode = $2 AND deleted_at IS NULL',
    [params.merchantId, params.livemode],
  );
  if (counted[0]!.n >= MAX_ENDPOINTS_PER_MODE) throw new TooManyEndpointsError(params.livemode);
  const secret = newWebhookSecret();
  const { rows } = await sql.query<EndpointRow>(
    `INSERT INTO webhook_endpoints (id, merchant_id, livemode, url, description, enabled_events, secret_sealed)
     VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING ${COLUMNS}`,
    [newId('we'), params.merchantId, params.livemode, params.url, params.description ?? null, params.enabledEvents ?? ['*'], box.seal(secret)],
  );
  return { endpoint: toEndpoint(rows[0]!), secret };
}

export async function getEndpoint(sql: Sql, owner: Owner, id: string): Promise<WebhookEndpoint | undefined> {
  const { rows } = await sql.query<EndpointRow>(
    `SELECT ${COLUMNS} FROM webhook_endpoints WHERE id = $1 AND merchant_id = $2 AND livemode = $3 AND deleted_at IS NULL`,
    [id, owner.merchantId, owner.livemode],
  );
  return rows[0] && toEndpoint(rows[0]);
}

export async function listEndpoints(sql: Sql, owner: Owner): Promise<WebhookEndpoint[]> {
  const { rows } = await sql.query<EndpointRow>(
    `SELECT ${COLUMNS} FROM webhook_endpoints WHERE merchant_id = $1 AND livemode = $2 AND deleted_at IS NULL ORDER BY created_at, id`,
    [owner.merchantId, owner.livemode],
  );
  return rows.map(toEndpoint);
}

/**
 * Changes an endpoint. Setting `status: 'enabled'` re-enables a disabled endpoint and forgets
 * its failure streak; events missed while disabled are not resent (replay them explicitly).
 */
export async function updateEndpoint(
  sql: Sql,
  owner: Owner,
  id: string,
  changes: { url?: string; description?: string | null; enabledEvents?: string[]; status?: 'enabled' | 'disabled' },
): Promise<WebhookEndpoint | undefined> {
  const { rows } = await sql.query<EndpointRow>(
    `UPDATE webhook_endpoints SET
       url = coalesce($4, url),
       description = CASE WHEN $5::boolean THEN $6 ELSE description END,
       enabled_events = coalesce($7, enabled_events),
       status = coalesce($8, status),
       disabled_reason = CASE WHEN $8 = 'enabled' THEN NULL WHEN $8 = 'disabled' AND status = 'enabled' THEN 'disabled by the merchant' ELSE disabled_reason END,
       disabled_at = CASE WHEN $8 = 'enabled' THEN NULL WHEN $8 = 'disabled' AND status = 'enabled' THEN now() ELSE disabled_at END,
       failing_since = CASE WHEN $8 = 'enabled' THEN NULL ELSE failing_since END,
       updated_at = now()
     WHERE id = $1 AND merchant_id = $2 AND livemode = $3 AND deleted_at IS NULL
     RETURNING ${COLUMNS}`,
    [
      id,
      owner.merchantId,
      owner.livemode,
      changes.url ?? null,
      'description' in changes,
      changes.description ?? null,
      changes.enabledEvents ?? null,
      changes.status ?? null,
    ],
  );
  return rows[0] && toEndpoint(rows[0]);
}

/** Soft-deletes an endpoint (its log stays) and ends its pending deliveries. */
export async function deleteEndpoint(sql: Sql, owner: Owner, id: string): Promise<boolean> {
  const { rowCount } = await sql.query(
    `UPDATE webhook_endpoints SET deleted_at = now(), status = 'disabled', disabled_reason = 'deleted', disabled_at = coalesce(disabled_at, now()), updated_at = now()
     WHERE id = $1 AND merchant_id = $2 AND livemode = $3 AND deleted_at IS NULL`,
    [id, owner.merchantId, owner.livemode],
  );
  if (!rowCount) return false;
  await failPendingDeliveries(sql, id, 'endpoint deleted');
  return true;
}

/**
 * Replaces an endpoint's signing secret; the new one is returned here, once. With
 * `expiresInSeconds` > 0 the replaced secret keeps signing beside it (a second signature) until
 * `previousSecretExpiresAt`; 0 stops it at once. At most two secrets sign: one still overlapping
 * from an earlier rotation stops now.
 */
export async function rotateEndpointSecret(
  sql: Sql,
  box: SecretBox,
  owner: Owner,
  id: string,
  params: { expiresInSeconds: number },
): Promise<{ endpoint: WebhookEndpoint; secret: string; previousSecretExpiresAt: Date | null } | undefined> {
  const secret = newWebhookSecret();
  const { rows } = await sql.query<EndpointRow & { previous_secret_expires_at: Date | null }>(
    `UPDATE webhook_endpoints SET
       previous_secret_sealed = CASE WHEN $5 > 0 THEN secret_sealed END,
       previous_secret_expires_at = CASE WHEN $5 > 0 THEN now() + make_interval(secs => $5) END,
       secret_sealed = $4, updated_at = now()
     WHERE id = $1 AND merchant_id = $2 AND livemode = $3 AND deleted_at IS NULL RETURNING ${COLUMNS}, previous_secret_expires_at`,
    [id, owner.merchantId, owner.livemode, box.seal(secret), params.expiresInSeconds],
  );
  return rows[0] && { endpoint: toEndpoint(rows[0]), secret, previousSecretExpiresAt: rows[0].previous_secret_expires_at };
}

/** Ends every pending delivery of an endpoint (disabled or deleted) with `reason`, but `except`. */
export async function failPendingDeliveries(sql: Sql, endpointId: string, reason: string, except?: string): Promise<number> {
  const { rowCount } = await sql.query(
    `UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL, locked_until = NULL, completed_at = now(), last_error = $2
     WHERE endpoint_id = $1 AND status = 'pending' AND ($3::text IS NULL OR id <> $3)`,
    [endpointId, reason, except ?? null],
  );
  return rowCount ?? 0;
}
