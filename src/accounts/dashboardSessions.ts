import type { Sql } from '../store/index.ts';
import { newId, randomBase62, sha256Hex } from '../internal/crypto.ts';
import type { Merchant } from './merchants.ts';
import { toDashboardUser, USER_COLUMNS, type DashboardUser, type DashboardUserRow } from './dashboardUsers.ts';

/**
 * A session ends after this long without a request (OWASP's session guidance: 2-5 hours idle for
 * low-risk, less for high; 2 h keeps a working day's tab usable across lunch, not overnight).
 */
export const IDLE_TIMEOUT_MS = 2 * 60 * 60_000;
/** ...and this long after sign-in whatever the activity: a stolen cookie works for half a day at most. */
export const ABSOLUTE_LIFETIME_MS = 12 * 60 * 60_000;
/** Money-routing actions want the password entered within this window (issue 15: 10 minutes). */
export const REAUTH_WINDOW_MS = 10 * 60_000;
/** `last_seen_at` is written at most this often per session: idle expiry needs minutes, not every request. */
const TOUCH_INTERVAL_MS = 60_000;

/** A signed-in browser, with its user and merchant, as every dashboard request sees it. */
export interface DashboardSession {
  id: string;
  user: DashboardUser;
  merchant: Merchant & { requireTotp: boolean };
  csrfToken: string;
  livemode: boolean;
  createdAt: Date;
  lastSeenAt: Date;
  expiresAt: Date;
  /** When the password was last entered in this session. */
  reauthAt: Date;
}

interface SessionRow extends DashboardUserRow {
  session_id: string;
  csrf_token: string;
  livemode: boolean;
  session_created_at: Date;
  last_seen_at: Date;
  expires_at: Date;
  reauth_at: Date;
  merchant_name: string;
  merchant_created_at: Date;
  dashboard_require_totp: boolean;
  now: Date;
}

/**
 * Starts a session for `userId` (after a correct password, and TOTP code when enabled). The token
 * goes into the cookie and is returned only here; the database keeps its SHA-256.
 */
export async function createDashboardSession(
  sql: Sql,
  params: { userId: string; ip?: string | null; userAgent?: string | null },
): Promise<{ token: string; id: string }> {
  const token = randomBase62(43);
  const id = newId('dss');
  await sql.query(
    `INSERT INTO dashboard_sessions (id, token_hash, user_id, csrf_token, expires_at, ip, user_agent)
     VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5), $6, $7)`,
    [id, sha256Hex(token), params.userId, randomBase62(43), ABSOLUTE_LIFETIME_MS / 1000, params.ip ?? null, params.userAgent?.slice(0, 300) ?? null],
  );
  return { token, id };
}

/**
 * The live session a cookie's token names, or undefined: unknown, signed out, past its absolute
 * or idle expiry, or its user disabled. Records activity (at most once a minute).
 */
export async function findDashboardSession(sql: Sql, token: string): Promise<DashboardSession | undefined> {
  if (token.length > 100) return undefined;
  const userColumns = USER_COLUMNS.split(', ')
    .map((column) => `u.${column}`)
    .join(', ');
  const { rows } = await sql.query<SessionRow>(
    `SELECT ${userColumns}, s.id AS session_id, s.csrf_token, s.livemode, s.created_at AS session_created_at, s.last_seen_at, s.expires_at, s.reauth_at,
            m.name AS merchant_name, m.created_at AS merchant_created_at, m.dashboard_require_totp, now() AS now
     FROM dashboard_sessions s JOIN dashboard_users u ON u.id = s.user_id JOIN merchants m ON m.id = u.merchant_id
     WHERE s.token_hash = $1 AND s.revoked_at IS NULL AND u.disabled_at IS NULL
       AND s.expires_at > now() AND s.last_seen_at > now() - make_interval(secs => $2)`,
    [sha256Hex(token), IDLE_TIMEOUT_MS / 1000],
  );
  const row = rows[0];
  if (!row) return undefined;
  if (row.now.getTime() - row.last_seen_at.getTime() > TOUCH_INTERVAL_MS) {
    await sql.query('UPDATE dashboard_sessions SET last_seen_at = now() WHERE id = $1', [row.session_id]);
  }
  return {
    id: row.session_id,
    user: toDashboardUser(row),
    merchant: { id: row.merchant_id, name: row.merchant_name, createdAt: row.merchant_created_at, requireTotp: row.dashboard_require_totp },
    csrfToken: row.csrf_token,
    livemode: row.livemode,
    createdAt: row.session_created_at,
    lastSeenAt: row.last_seen_at,
    expiresAt: row.expires_at,
    reauthAt: row.reauth_at,
  };
}

/** Whether the password was entered in this session within {@link REAUTH_WINDOW_MS}. */
export function passwordIsRecent(session: Pick<DashboardSession, 'reauthAt'>, now = new Date()): boolean {
  return now.getTime() - session.reauthAt.getTime() < REAUTH_WINDOW_MS;
}

/** Records that the password was just entered again in this session. */
export async function markPasswordEntered(sql: Sql, sessionId: string): Promise<void> {
  await sql.query('UPDATE dashboard_sessions SET reauth_at = now() WHERE id = $1', [sessionId]);
}

/** Switches the session between sandbox (false) and live (true) data. */
export async function setSessionLivemode(sql: Sql, sessionId: string, livemode: boolean): Promise<void> {
  await sql.query('UPDATE dashboard_sessions SET livemode = $2 WHERE id = $1', [sessionId, livemode]);
}

/** Signs one session out. */
export async function endDashboardSession(sql: Sql, sessionId: string): Promise<void> {
  await sql.query('UPDATE dashboard_sessions SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL', [sessionId]);
}

/** Signs every session of a user out ("sign out everywhere"). @returns how many ended. */
export async function endAllDashboardSessions(sql: Sql, userId: string): Promise<number> {
  const result = await sql.query('UPDATE dashboard_sessions SET revoked_at = now() WHERE user_id = $1 AND revoked_at IS NULL', [userId]);
  return result.rowCount ?? 0;
}
