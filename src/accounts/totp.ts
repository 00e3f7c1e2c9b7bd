import { generateSecret, generateURI, verify } from 'otplib';
import type { Sql, Store } from '../store/index.ts';
import type { SecretBox } from '../internal/crypto.ts';
import { badRequest, conflict, notFound } from '../internal/errors.ts';
import { recordAudit, type Actor } from './audit.ts';
import { toDashboardUser, USER_COLUMNS, type DashboardUser, type DashboardUserRow } from './dashboardUsers.ts';

/** RFC 6238 defaults every authenticator app uses: 30-second steps, 6 digits, SHA-1. */
const PERIOD_SECONDS = 30;
/** One step of clock drift either way (RFC 6238 §5.2 recommends at most one). */
const TOLERANCE_SECONDS = PERIOD_SECONDS;
/** The issuer authenticator apps show beside the account. */
export const TOTP_ISSUER = 'svc gateway';

/**
 * Checks `code` against a sealed secret and returns the time step it matched, or undefined.
 * `afterStep` refuses a step already used (RFC 6238 §5.2: a code is accepted once).
 */
async function matchStep(box: SecretBox, sealed: string, code: string, afterStep: bigint | null): Promise<bigint | undefined> {
  const token = code.replace(/\s+/g, '');
  if (!/^\d{6}$/.test(token)) return undefined;
  const result = await verify({ secret: box.open(sealed), token, epochTolerance: TOLERANCE_SECONDS });
  if (!result.valid) return undefined;
  const step = BigInt(Math.floor((result as { epoch: number }).epoch / PERIOD_SECONDS));
  if (afterStep !== null && step <= afterStep) return undefined;
  return step;
}

/**
 * Starts setting up TOTP for `user`: a new secret, stored sealed but not yet in force (sign-in
 * does not ask for a code until {@link confirmTotp}). @returns the secret and its otpauth URI for the QR code.
 */
export async function beginTotp(sql: Sql, box: SecretBox, user: DashboardUser): Promise<{ secret: string; uri: string }> {
  if (user.totpEnabled) throw conflict('two-factor sign-in is already on; turn it off first to set up a new device');
  const secret = generateSecret();
  await sql.query('UPDATE dashboard_users SET totp_secret_sealed = $2 WHERE id = $1 AND totp_enabled_at IS NULL', [user.id, box.seal(secret)]);
  return { secret, uri: generateURI({ issuer: TOTP_ISSUER, label: user.email, secret }) };
}

/** Turns TOTP on once the user shows a code of the secret from {@link beginTotp}. A wrong code is a 400. */
export async function confirmTotp(store: Store, box: SecretBox, params: { user: DashboardUser; code: string; actor: Actor }): Promise<void> {
  await store.transaction(async (sql) => {
    const { rows } = await sql.query<{ totp_secret_sealed: string | null; totp_enabled_at: Date | null }>(
      'SELECT totp_secret_sealed, totp_enabled_at FROM dashboard_users WHERE id = $1 FOR UPDATE',
      [params.user.id],
    );
    const row = rows[0];
    if (!row?.totp_secret_sealed || row.totp_enabled_at) throw conflict('start the two-factor setup again');
    const step = await matchStep(box, row.totp_secret_sealed, params.code, null);
    if (step === undefined) throw badRequest('that code does not match; check the device’s clock and enter the current 6-digit code');
    await sql.query('UPDATE dashboard_users SET totp_enabled_at = now(), totp_last_step = $2 WHERE id = $1', [params.user.id, step]);
    await recordAudit(sql, { merchantId: params.user.merchantId, actor: params.actor, action: 'user.totp_enabled', target: params.user.id });
  });
}

/**
 * Whether `code` is the user's current TOTP code, used once: the step it matched is stored, and
 * the same or an earlier step is refused from then on (a code seen over a shoulder is spent).
 */
export async function checkTotpCode(store: Store, box: SecretBox, params: { userId: string; code: string }): Promise<boolean> {
  return store.transaction(async (sql) => {
    const { rows } = await sql.query<{ totp_secret_sealed: string | null; totp_enabled_at: Date | null; totp_last_step: bigint | null }>(
      'SELECT totp_secret_sealed, totp_enabled_at, totp_last_step FROM dashboard_users WHERE id = $1 FOR UPDATE',
      [params.userId],
    );
    const row = rows[0];
    if (!row?.totp_secret_sealed || !row.totp_enabled_at) return false;
    const step = await matchStep(box, row.totp_secret_sealed, params.code, row.totp_last_step);
    if (step === undefined) return false;
    await sql.query('UPDATE dashboard_users SET totp_last_step = $2 WHERE id = $1', [params.userId, step]);
    return true;
  });
}

/** Turns TOTP off for a user (its own choice, after the password; refused when the merchant requires it). */
export async function disableTotp(store: Store, params: { user: DashboardUser; actor: Actor }): Promise<void> {
  await store.transaction(async (sql) => {
    const { rows } = await sql.query<{ dashboard_require_totp: boolean }>('SELECT dashboard_require_totp FROM merchants WHERE id = $1', [
      params.user.merchantId,
    ]);
    if (rows[0]?.dashboard_require_totp) throw conflict('this merchant requires two-factor sign-in; an owner can change that in Team');
    await sql.query('UPDATE dashboard_users SET totp_secret_sealed = NULL, totp_enabled_at = NULL, totp_last_step = NULL WHERE id = $1', [params.user.id]);
    await recordAudit(sql, { merchantId: params.user.merchantId, actor: params.actor, action: 'user.totp_disabled', target: params.user.id });
  });
}

/**
 * Turns another user's TOTP off (a lost device, or an authenticator someone else enrolled): the
 * explicit, audited way back in, since a sign-in link does not skip a user's second factor
 * (docs/security.md). An owner does it from Team (`merchantId` scopes the id: another merchant's
 * or an unknown user is a 404); the operator with `svc users reset-two-factor` (no `merchantId`),
 * which also ends the user's sessions, since it is the way out when no owner can act. The user
 * then signs in with the password (or a new link) and sets up a new device.
 */
export async function resetTotp(store: Store, params: { merchantId?: string; userId: string; actor: Actor; endSessions?: boolean }): Promise<DashboardUser> {
  return store.transaction(async (sql) => {
    const { rows } = await sql.query<DashboardUserRow>(
      `UPDATE dashboard_users SET totp_secret_sealed = NULL, totp_enabled_at = NULL, totp_last_step = NULL
        WHERE id = $1 AND ($2::text IS NULL OR merchant_id = $2) RETURNING ${USER_COLUMNS}`,
      [params.userId, params.merchantId ?? null],
    );
    if (!rows[0]) throw notFound(`no dashboard user ${params.userId}`);
    const user = toDashboardUser(rows[0]);
    if (params.endSessions) await sql.query('UPDATE dashboard_sessions SET revoked_at = now() WHERE user_id = $1 AND revoked_at IS NULL', [user.id]);
    await recordAudit(sql, {
      merchantId: user.merchantId,
      actor: params.actor,
      action: 'user.totp_disabled',
      target: user.id,
      details: { email: user.email, ...(params.actor.userId === null ? { resetByOperator: true } : { resetByOwner: true }) },
    });
    return user;
  });
}

/** The owner setting: every user of the merchant must sign in with a TOTP code (users without one set it up at their next request). */
export async function setRequireTotp(store: Store, params: { merchantId: string; required: boolean; actor: Actor }): Promise<void> {
  await store.transaction(async (sql) => {
    await sql.query('UPDATE merchants SET dashboard_require_totp = $2 WHERE id = $1', [params.merchantId, params.required]);
    await recordAudit(sql, {
      merchantId: params.merchantId,
      actor: params.actor,
      action: 'merchant.require_totp_changed',
      details: { required: params.required },
    });
  });
}
