import type { Sql } from '../store/index.ts';
import { badRequest } from '../internal/errors.ts';

/**
 * The sensitive actions the audit log records (issue 15): people and their access, keys, money
 * routing (wallets, webhooks), refunds. Listed once here so the log's filter and its readers
 * agree; a page that adds an action adds it here.
 */
export const AUDIT_ACTIONS = [
  'user.invited',
  'user.sign_in_link_created',
  'user.password_set',
  'user.password_changed',
  'user.role_changed',
  'user.disabled',
  'user.totp_enabled',
  'user.totp_disabled',
  'user.signed_in',
  'user.signed_out_everywhere',
  'merchant.created',
  'merchant.require_totp_changed',
  'merchant.settings_changed',
  'merchant.brand_changed',
  'merchant.logo_set',
  'merchant.logo_removed',
  'key.created',
  'key.revoked',
  'wallet.added',
  'wallet.default_set',
  'wallet.removed',
  'webhook.endpoint_created',
  'webhook.endpoint_updated',
  'webhook.endpoint_disabled',
  'webhook.secret_rotated',
  'webhook.redelivered',
  'refund.completed',
  'refund.rejected',
  'transfer.attributed',
  'payment_link.created',
  'payment_link.deactivated',
  'payment_link.x402_discoverable_changed',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** Who did it: a dashboard user (with the email it had then), an API key, or the operator with the CLI. */
export interface Actor {
  /** null: the operator (svc CLI) or an API key. */
  userId: string | null;
  /** The user's email, `API key key_… (svc_live_…abcd)`, or `operator (CLI…)`. */
  label: string;
  ip?: string | null;
  /** The API key that made the change (see {@link apiKeyActor}); absent for people. */
  apiKeyId?: string | null;
}

/** The CLI's actor when the operator's name is unknown; prefer {@link cliOperator}. */
export const OPERATOR: Actor = { userId: null, label: 'operator (CLI)', ip: null };

/**
 * The CLI's actor, named by the operating-system user who ran `svc` (`operator alice (CLI)`):
 * whoever runs the CLI controls the database anyway, so this says who, not a proof of it.
 */
export function cliOperator(osUser: string | undefined): Actor {
  const name = osUser
    ?.trim()
    .replace(/[^\w.@-]/g, '')
    .slice(0, 64);
  return name ? { userId: null, label: `operator ${name} (CLI)`, ip: null } : OPERATOR;
}

/** An API key as the actor: its id and hint (prefix and last four characters, never the secret), and the caller's IP. */
export function apiKeyActor(params: { keyId: string; hint: string; ip: string | null }): Actor {
  return { userId: null, label: `API key ${params.keyId} (${params.hint})`, ip: params.ip, apiKeyId: params.keyId };
}

export interface AuditEntry {
  id: string;
  merchantId: string;
  userId: string | null;
  /** The API key that made the change; null for dashboard users and the CLI. */
  apiKeyId: string | null;
  actor: string;
  action: AuditAction;
  target: string | null;
  livemode: boolean | null;
  ip: string | null;
  at: Date;
  details: Record<string, unknown>;
}

interface AuditRow {
  id: bigint;
  merchant_id: string;
  user_id: string | null;
  api_key_id: string | null;
  actor: string;
  action: AuditAction;
  target: string | null;
  livemode: boolean | null;
  ip: string | null;
  at: Date;
  details: Record<string, unknown>;
}

const toEntry = (row: AuditRow): AuditEntry => ({
  id: String(row.id),
  merchantId: row.merchant_id,
  userId: row.user_id,
  apiKeyId: row.api_key_id,
  actor: row.actor,
  action: row.action,
  target: row.target,
  livemode: row.livemode,
  ip: row.ip,
  at: row.at,
  details: row.details,
});

/**
 * Appends one entry. Pass the `Sql` of the transaction that makes the change, so the entry
 * commits with it (or not at all). `details` must never hold a secret.
 */
export async function recordAudit(
  sql: Sql,
  params: { merchantId: string; actor: Actor; action: AuditAction; target?: string | null; livemode?: boolean | null; details?: Record<string, unknown> },
): Promise<void> {
  await sql.query(
    'INSERT INTO audit_log (merchant_id, user_id, api_key_id, actor, action, target, livemode, ip, details) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)',
    [
      params.merchantId,
      params.actor.userId,
      params.actor.apiKeyId ?? null,
      params.actor.label,
      params.action,
      params.target ?? null,
      params.livemode ?? null,
      params.actor.ip ?? null,
      JSON.stringify(params.details ?? {}),
    ],
  );
}

/** Filters of {@link listAudit}; all optional. */
export interface AuditFilter {
  action?: string;
  /** Entries by this user id. */
  userId?: string;
  /** Entries by this API key id. */
  apiKeyId?: string;
  from?: Date;
  to?: Date;
  /** Entries older than this id (paging, newest first). */
  beforeId?: string;
  limit?: number;
}

/** Largest page of the audit log; the CSV export takes this many too. */
export const MAX_AUDIT_PAGE = 1000;

/** One merchant's entries, newest first. An unknown action is a 400, not an empty list. */
export async function listAudit(sql: Sql, merchantId: string, filter: AuditFilter = {}): Promise<AuditEntry[]> {
  if (filter.action && !(AUDIT_ACTIONS as readonly string[]).includes(filter.action)) throw badRequest(`action must be one of ${AUDIT_ACTIONS.join(', ')}`);
  if (filter.beforeId !== undefined && !/^\d{1,18}$/.test(filter.beforeId)) throw badRequest('before must be an audit entry id');
  const limit = Math.min(Math.max(filter.limit ?? 100, 1), MAX_AUDIT_PAGE);
  const { rows } = await sql.query<AuditRow>(
    `SELECT id, merchant_id, user_id, api_key_id, actor, action, target, livemode, ip, at, details FROM audit_log
     WHERE merchant_id = $1 AND ($2::text IS NULL OR action = $2) AND ($3::text IS NULL OR user_id = $3)
       AND ($4::timestamptz IS NULL OR at >= $4) AND ($5::timestamptz IS NULL OR at < $5) AND ($6::bigint IS NULL OR id < $6)
       AND ($8::text IS NULL OR api_key_id = $8)
     ORDER BY at DESC, id DESC LIMIT $7`,
    [merchantId, filter.action || null, filter.userId || null, filter.from ?? null, filter.to ?? null, filter.beforeId ?? null, limit, filter.apiKeyId || null],
  );
  return rows.map(toEntry);
}

/** RFC 4180 field; a leading `= + - @` is prefixed with `'` so a spreadsheet does not run it as a formula. */
function csvField(value: string): string {
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

/** The entries as CSV (header row first). */
export function auditCsv(entries: AuditEntry[]): string {
  const header = ['at', 'actor', 'user_id', 'action', 'target', 'mode', 'ip', 'details'];
  const lines = entries.map((entry) =>
    [
      entry.at.toISOString(),
      entry.actor,
      entry.userId ?? '',
      entry.action,
      entry.target ?? '',
      entry.livemode === null ? '' : entry.livemode ? 'live' : 'test',
      entry.ip ?? '',
      JSON.stringify(entry.details),
    ]
      .map(csvField)
      .join(','),
  );
  return `${[header.join(','), ...lines].join('\r\n')}\r\n`;
}
