import type { Sql } from '../store/index.ts';
import { RateLimitedError } from '../internal/errors.ts';

/**
 * Password guesses allowed per account in one window: enough for a person who mistypes, far too
 * few for guessing (5 per 15 minutes is 480 a day against a 12+ character password). The cost is
 * that someone who knows an email can lock its owner out for 15 minutes; an owner can still hand
 * out a sign-in link, and the lockout ends by itself.
 */
export const ACCOUNT_ATTEMPTS = 5;
/** Attempts per client IP in one window, over all accounts: one office behind a NAT signs in fine; a sprayer does not. */
export const IP_ATTEMPTS = 30;
/** The window: counts reset this long after the first failure in it. */
export const SIGN_IN_WINDOW_SECONDS = 15 * 60;

/**
 * The two buckets of an attempt, as SQL over `$1` (the email as typed, trimmed) and `$2` (the IP). The
 * account's key folds case with Postgres `lower`, the function the sign-in lookup and the unique
 * index use, so every spelling that finds an account counts against that account. JavaScript's
 * toLowerCase folds differently (`İ` becomes `i̇`, where Postgres gives `i`), which gave
 * `vİewer@…` a fresh allowance for `viewer@…`.
 */
const BUCKETS_SQL = `ARRAY['account:' || lower($1::text), 'ip:' || $2::text]`;

/**
 * Counts one password (or TOTP) attempt for the account and the IP before it is checked, and
 * refuses it (429) when either is over its limit. Counting first makes concurrent guesses
 * count too; a correct attempt then calls {@link forgiveSignInAttempt}. In Postgres, so the
 * limit holds across every process of the api role.
 */
export async function takeSignInAttempt(sql: Sql, params: { email: string; ip: string }): Promise<void> {
  const { rows } = await sql.query<{ bucket: string; failures: number; retry_after: number }>(
    `INSERT INTO dashboard_sign_in_failures AS f (bucket, failures, window_started_at)
     SELECT b, 1, now() FROM unnest(${BUCKETS_SQL}) AS b
     ON CONFLICT (bucket) DO UPDATE SET
       failures = CASE WHEN f.window_started_at < now() - make_interval(secs => $3) THEN 1 ELSE f.failures + 1 END,
       window_started_at = CASE WHEN f.window_started_at < now() - make_interval(secs => $3) THEN now() ELSE f.window_started_at END
     RETURNING bucket, failures, ceil(extract(epoch FROM f.window_started_at + make_interval(secs => $3) - now()))::int AS retry_after`,
    [params.email.trim(), params.ip, SIGN_IN_WINDOW_SECONDS],
  );
  for (const row of rows) {
    const limit = row.bucket.startsWith('account:') ? ACCOUNT_ATTEMPTS : IP_ATTEMPTS;
    if (row.failures > limit) {
      throw new RateLimitedError(`too many sign-in attempts; try again in ${Math.ceil(Math.max(row.retry_after, 1) / 60)} minutes`, {
        retryAfterSeconds: Math.max(row.retry_after, 1),
      });
    }
  }
}

/**
 * After a correct attempt: the account's count starts again and the IP gets its attempt back.
 * `undoOnly` (a right password that still needs its TOTP code) only takes this attempt back from
 * both counts: clearing the account's count there would let someone who has the password reset
 * it between code guesses.
 */
export async function forgiveSignInAttempt(sql: Sql, params: { email: string; ip: string }, options: { undoOnly?: boolean } = {}): Promise<void> {
  // Trimmed as findDashboardUserForSignIn trims before its lower().
  const values = [params.email.trim(), params.ip];
  if (options.undoOnly) {
    await sql.query(`UPDATE dashboard_sign_in_failures SET failures = greatest(failures - 1, 0) WHERE bucket = ANY(${BUCKETS_SQL})`, values);
    return;
  }
  await sql.query(`DELETE FROM dashboard_sign_in_failures WHERE bucket = (${BUCKETS_SQL})[1]`, values);
  await sql.query(`UPDATE dashboard_sign_in_failures SET failures = greatest(failures - 1, 0) WHERE bucket = (${BUCKETS_SQL})[2]`, values);
}
