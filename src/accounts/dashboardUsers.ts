import { isUniqueViolation, type Sql, type Store } from '../store/index.ts';
import { newId, randomBase62, sha256Hex } from '../internal/crypto.ts';
import { badRequest, conflict, GoneError, notFound } from '../internal/errors.ts';

import { recordAudit, type Actor } from './audit.ts';
import { checkNewPassword, hashPassword } from './passwords.ts';

/**
 * Dashboard roles (issue 15): `owner` does everything (users, wallets, live keys), `developer`
 * keys in sandbox, webhooks, sandbox, payment links, `viewer` reads. What each may do is the
 * permission table in src/accounts/permissions.ts.
 */
export const ROLES = ['owner', 'developer', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

/** A sign-in link is valid this long (issue 15: 30 minutes). */
export const SIGN_IN_LINK_TTL_MS = 30 * 60_000;

export interface DashboardUser {
  id: string;
  merchantId: string;
  email: string;
  role: Role;
  /** Whether a password is set (a user invited but not yet signed in has none). */
  hasPassword: boolean;
  totpEnabled: boolean;
  disabledAt: Date | null;
  invitedBy: string | null;
  createdAt: Date;
}

/** The columns of a user that sign-in needs and pages never show. */
export interface DashboardUserSecrets {
  passwordHash: string | null;
  totpSecretSealed: string | null;
  totpLastStep: bigint | null;
}

interface UserRow {
  id: string;
  merchant_id: string;
  email: string;
  role: Role;
  password_hash: string | null;
  totp_secret_sealed: string | null;
  totp_enabled_at: Date | null;
  totp_last_step: bigint | null;
  invited_by: string | null;
  disabled_at: Date | null;
  created_at: Date;
}

/** The column list every user query reads (exported for the session lookup's join). */
export const USER_COLUMNS =
  'id, merchant_id, email, role, password_hash, totp_secret_sealed, totp_enabled_at, totp_last_step, invited_by, disabled_at, created_at';

export const toDashboardUser = (row: UserRow): DashboardUser => ({
  id: row.id,
  merchantId: row.merchant_id,
  email: row.email,
  role: row.role,
  hasPassword: row.password_hash !== null,
  totpEnabled: row.totp_enabled_at !== null,
  disabledAt: row.disabled_at,
  invitedBy: row.invited_by,
  createdAt: row.created_at,
});

const toSecrets = (row: UserRow): DashboardUserSecrets => ({
  passwordHash: row.password_hash,
  totpSecretSealed: row.totp_secret_sealed,
  totpLastStep: row.totp_last_step,
});

export type { UserRow as DashboardUserRow };

/** A plausible email (one `@`, no spaces, a dot in the domain), trimmed; the gateway sends no mail, so no more is checked. */
export function checkEmail(email: string): string {
  const trimmed = email.trim();
  if (trimmed.length < 3 || trimmed.length > 254 || !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(trimmed)) throw badRequest('email must be an email address');
  return trimmed;
}

export function checkRole(role: string): Role {
  if (!(ROLES as readonly string[]).includes(role)) throw badRequest(`role must be one of ${ROLES.join(', ')}`);
  return role as Role;
}

/** A new single-use link for `userId`; its token is returned once, only its hash is stored. */
export async function createSignInLink(sql: Sql, userId: string): Promise<{ token: string; expiresAt: Date }> {
  const token = randomBase62(43);
  const { rows } = await sql.query<{ expires_at: Date }>(
    `INSERT INTO dashboard_sign_in_links (token_hash, user_id, expires_at) VALUES ($1, $2, now() + make_interval(secs => $3)) RETURNING expires_at`,
    [sha256Hex(token), userId, SIGN_IN_LINK_TTL_MS / 1000],
  );
  return { token, expiresAt: rows[0]!.expires_at };
}

/** The URL of a sign-in link under the gateway's public URL. */
export function signInLinkUrl(publicUrl: string, token: string): string {
  return `${publicUrl.replace(/\/+$/, '')}/dashboard/link/${token}`;
}

/**
 * Adds a user to a merchant and makes the first sign-in link (what `svc users create` and the
 * Team page's invitation both do), with its audit entry, in one transaction. Emails are unique
 * per merchant (case-insensitively): an email already a user of this merchant is a 409, and a
 * user of another merchant changes nothing, so an invitation never tells whether an address
 * works for anyone else (sign-in tells the users of one email apart by their passwords).
 */
export async function inviteDashboardUser(
  store: Store,
  params: { merchantId: string; email: string; role: string; actor: Actor },
): Promise<{ user: DashboardUser; link: { token: string; expiresAt: Date } }> {
  const email = checkEmail(params.email);
  const role = checkRole(params.role);
  return store.transaction(async (sql) => {
    const merchant = await sql.query('SELECT 1 FROM merchants WHERE id = $1', [params.merchantId]);
    if (merchant.rowCount === 0) throw notFound(`merchant ${params.merchantId} does not exist`);
    let row: UserRow;
    try {
      const { rows } = await sql.query<UserRow>(
        `INSERT INTO dashboard_users (id, merchant_id, email, role, invited_by) VALUES ($1, $2, $3, $4, $5) RETURNING ${USER_COLUMNS}`,
        [newId('usr'), params.merchantId, email, role, params.actor.userId],
      );
      row = rows[0]!;
    } catch (error) {
      if (isUniqueViolation(error)) throw conflict(`${email} is already a dashboard user of this merchant`);
      throw error;
    }
    const link = await createSignInLink(sql, row.id);
    await recordAudit(sql, { merchantId: params.merchantId, actor: params.actor, action: 'user.invited', target: row.id, details: { email, role } });
    return { user: toDashboardUser(row), link };
  });
}

/**
 * A new sign-in link for an existing, enabled user of `merchantId` (a forgotten password, an
 * expired invitation). Earlier unused links stay valid until they expire.
 */
export async function reissueSignInLink(
  store: Store,
  params: { merchantId: string; userId: string; actor: Actor },
): Promise<{ token: string; expiresAt: Date }> {
  return store.transaction(async (sql) => {
    const user = await getDashboardUser(sql, params.merchantId, params.userId);
    if (!user) throw notFound(`no dashboard user ${params.userId}`);
    if (user.disabledAt) throw conflict('this user is disabled');
    const link = await createSignInLink(sql, user.id);
    await recordAudit(sql, {
      merchantId: params.merchantId,
      actor: params.actor,
      action: 'user.sign_in_link_created',
      target: user.id,
      details: { email: user.email },
    });
    return link;
  });
}

const LINK_REFUSED =
  'this sign-in link is not valid: it was already used, it expired (links last 30 minutes) or its user is disabled. Ask an owner (or the operator) for a new one';

/** The user a sign-in link is for, while it is usable; a used, expired or unknown link is a 410. */
export async function findSignInLink(sql: Sql, token: string): Promise<DashboardUser> {
  const { rows } = await sql.query<UserRow>(
    `SELECT ${USER_COLUMNS.split(', ')
      .map((column) => `u.${column}`)
      .join(', ')} FROM dashboard_sign_in_links l JOIN dashboard_users u ON u.id = l.user_id
     WHERE l.token_hash = $1 AND l.used_at IS NULL AND l.expires_at > now() AND u.disabled_at IS NULL`,
    [sha256Hex(token)],
  );
  if (!rows[0]) throw new GoneError(LINK_REFUSED);
  return toDashboardUser(rows[0]);
}

/**
 * Uses a sign-in link: sets the user's password and marks the link used, once (a second use,
 * even concurrent, is a 410). Every other session of the user ends (the password changed).
 */
export async function useSignInLink(
  store: Store,
  params: { token: string; password: string; confirmation: string; ip?: string | null },
): Promise<DashboardUser> {
  checkNewPassword(params.password, params.confirmation);
  const passwordHash = await hashPassword(params.password);
  return store.transaction(async (sql) => {
    const { rows: links } = await sql.query<{ user_id: string }>(
      `UPDATE dashboard_sign_in_links SET used_at = now() WHERE token_hash = $1 AND used_at IS NULL AND expires_at > now() RETURNING user_id`,
      [sha256Hex(params.token)],
    );
    if (!links[0]) throw new GoneError(LINK_REFUSED);
    const { rows } = await sql.query<UserRow>(
      `UPDATE dashboard_users SET password_hash = $2, password_changed_at = now() WHERE id = $1 AND disabled_at IS NULL RETURNING ${USER_COLUMNS}`,
      [links[0].user_id, passwordHash],
    );
    if (!rows[0]) throw new GoneError(LINK_REFUSED);
    const user = toDashboardUser(rows[0]);
    await sql.query('UPDATE dashboard_sessions SET revoked_at = now() WHERE user_id = $1 AND revoked_at IS NULL', [user.id]);
    await recordAudit(sql, {
      merchantId: user.merchantId,
      actor: { userId: user.id, label: user.email, ip: params.ip ?? null },
      action: 'user.password_set',
      target: user.id,
    });
    return user;
  });
}

/** A merchant's users, oldest first. */
export async function listDashboardUsers(sql: Sql, merchantId: string): Promise<DashboardUser[]> {
  const { rows } = await sql.query<UserRow>(`SELECT ${USER_COLUMNS} FROM dashboard_users WHERE merchant_id = $1 ORDER BY created_at, id`, [merchantId]);
  return rows.map(toDashboardUser);
}

/** One user of `merchantId` (another merchant's user is undefined, as an unknown id). */
export async function getDashboardUser(sql: Sql, merchantId: string, userId: string): Promise<DashboardUser | undefined> {
  const { rows } = await sql.query<UserRow>(`SELECT ${USER_COLUMNS} FROM dashboard_users WHERE merchant_id = $1 AND id = $2`, [merchantId, userId]);
  return rows[0] && toDashboardUser(rows[0]);
}

/** A user sign-in may start a session for, with what it checks and the merchant's name (to choose between merchants). */
export interface SignInCandidate {
  user: DashboardUser;
  secrets: DashboardUserSecrets;
  merchantName: string;
}

/**
 * The users with this email (case-insensitive, Postgres `lower` as the unique index), one per
 * merchant at most, oldest first; for sign-in only, which tells them apart by their passwords.
 */
export async function findDashboardUsersForSignIn(sql: Sql, email: string): Promise<SignInCandidate[]> {
  const { rows } = await sql.query<UserRow & { merchant_name: string }>(
    `SELECT ${USER_COLUMNS.split(', ')
      .map((column) => `u.${column}`)
      .join(', ')}, m.name AS merchant_name
       FROM dashboard_users u JOIN merchants m ON m.id = u.merchant_id WHERE lower(u.email) = lower($1) ORDER BY u.created_at, u.id`,
    [email.trim()],
  );
  return rows.map((row) => ({ user: toDashboardUser(row), secrets: toSecrets(row), merchantName: row.merchant_name }));
}

/** The secrets of one user by id (re-authentication, TOTP). */
export async function getDashboardUserSecrets(sql: Sql, userId: string): Promise<DashboardUserSecrets | undefined> {
  const { rows } = await sql.query<UserRow>(`SELECT ${USER_COLUMNS} FROM dashboard_users WHERE id = $1`, [userId]);
  return rows[0] && toSecrets(rows[0]);
}

/** Refuses a change that would leave the merchant without an enabled owner (nobody could manage users then). */
async function keepAnOwner(sql: Sql, merchantId: string, userId: string): Promise<void> {
  const { rows } = await sql.query<{ count: bigint }>(
    `SELECT count(*) AS count FROM dashboard_users WHERE merchant_id = $1 AND role = 'owner' AND disabled_at IS NULL AND id <> $2`,
    [merchantId, userId],
  );
  if (rows[0]!.count === 0n) throw conflict('the merchant must keep at least one enabled owner');
}

/**
 * Disables a user: its sessions end at once and it cannot sign in again. `merchantId` scopes the
 * id (the dashboard passes its merchant; the CLI passes none). From the dashboard the last
 * enabled owner cannot be disabled; the operator can.
 */
export async function disableDashboardUser(
  store: Store,
  params: { userId: string; merchantId?: string; actor: Actor; keepOwner?: boolean },
): Promise<DashboardUser> {
  return store.transaction(async (sql) => {
    const { rows: found } = await sql.query<UserRow>(
      `SELECT ${USER_COLUMNS} FROM dashboard_users WHERE id = $1 AND ($2::text IS NULL OR merchant_id = $2) FOR UPDATE`,
      [params.userId, params.merchantId ?? null],
    );
    if (!found[0]) throw notFound(`no dashboard user ${params.userId}`);
    if (found[0].disabled_at) return toDashboardUser(found[0]);
    if (params.keepOwner && found[0].role === 'owner') await keepAnOwner(sql, found[0].merchant_id, found[0].id);
    const { rows } = await sql.query<UserRow>(`UPDATE dashboard_users SET disabled_at = now() WHERE id = $1 RETURNING ${USER_COLUMNS}`, [params.userId]);
    await sql.query('UPDATE dashboard_sessions SET revoked_at = now() WHERE user_id = $1 AND revoked_at IS NULL', [params.userId]);
    const user = toDashboardUser(rows[0]!);
    await recordAudit(sql, { merchantId: user.merchantId, actor: params.actor, action: 'user.disabled', target: user.id, details: { email: user.email } });
    return user;
  });
}

/** Changes a user's role (owners, from the Team page); the last enabled owner keeps its role. */
export async function setDashboardUserRole(store: Store, params: { merchantId: string; userId: string; role: string; actor: Actor }): Promise<DashboardUser> {
  const role = checkRole(params.role);
  return store.transaction(async (sql) => {
    const { rows: found } = await sql.query<UserRow>(`SELECT ${USER_COLUMNS} FROM dashboard_users WHERE id = $1 AND merchant_id = $2 FOR UPDATE`, [
      params.userId,
      params.merchantId,
    ]);
    if (!found[0]) throw notFound(`no dashboard user ${params.userId}`);
    if (found[0].disabled_at) throw conflict('this user is disabled');
    if (found[0].role === role) return toDashboardUser(found[0]);
    if (found[0].role === 'owner') await keepAnOwner(sql, params.merchantId, params.userId);
    const { rows } = await sql.query<UserRow>(`UPDATE dashboard_users SET role = $2 WHERE id = $1 RETURNING ${USER_COLUMNS}`, [params.userId, role]);
    await recordAudit(sql, {
      merchantId: params.merchantId,
      actor: params.actor,
      action: 'user.role_changed',
      target: params.userId,
      details: { email: found[0].email, from: found[0].role, to: role },
    });
    return toDashboardUser(rows[0]!);
  });
}

/** Sets a new password (the caller checked the current one); every other session of the user ends. */
export async function changeDashboardPassword(
  store: Store,
  params: { user: DashboardUser; password: string; confirmation: string; keepSessionId: string; actor: Actor },
): Promise<void> {
  checkNewPassword(params.password, params.confirmation);
  const passwordHash = await hashPassword(params.password);
  await store.transaction(async (sql) => {
    await sql.query('UPDATE dashboard_users SET password_hash = $2, password_changed_at = now() WHERE id = $1', [params.user.id, passwordHash]);
    await sql.query('UPDATE dashboard_sessions SET revoked_at = now() WHERE user_id = $1 AND id <> $2 AND revoked_at IS NULL', [
      params.user.id,
      params.keepSessionId,
    ]);
    await recordAudit(sql, { merchantId: params.user.merchantId, actor: params.actor, action: 'user.password_changed', target: params.user.id });
  });
}
