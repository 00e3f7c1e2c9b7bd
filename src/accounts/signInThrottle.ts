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

/** Whose attempt it is: the users its email found, or (found none) the email itself; and the client's IP. */
export interface SignInAttempt {
  ip: string;
  /** The users the attempt's password is checked against; each counts it. */
  userIds: readonly string[];
  /** The email as typed; its bucket counts the attempt when `userIds` is empty. */
  email: string;
}

/**
 * The buckets of an attempt, as SQL over `$1` (user ids), `$2` (the email, trimmed) and `$3`
 * (the IP): one per user the email found (`user:<id>`), else the email's (`account:<email>`,
 * so unknown and known emails lock alike and the 429 tells nothing), and the IP's.
 *
 * Per user, not per email: one email may be a user of several merchants, and a correct sign-in
 * clears its own user's count; with one bucket per email, a merchant owner who invited someone's
 * address could clear it between guesses at that person's password elsewhere. The email's key
 * folds case with Postgres `lower`, the function of the lookup and its index (JavaScript's
 * toLowerCase makes `i̇` of `İ` where Postgres makes `i`: `vİewer@…` got a fresh allowance).
 */
const BUCKETS_SQL = `($1::text[] || CASE WHEN cardinality($1::text[]) = 0 THEN ARRAY['account:' || lower($2::text)] ELSE '{}'::text[] END || ARRAY['ip:' || $3::text])`;

const bucketValues = (attempt: SignInAttempt) => [attempt.userIds.map((id) => `user:${id}`), attempt.email.trim(), attempt.ip];

/** What counting an attempt found. */
export interface SignInCount {
  /** Users of the attempt over their limit: their passwords are not checked. */
  locked: readonly string[];
  /** The 429 for the attempt: the IP (or the email that names no user) is over its limit, or every user is. */
  refusal: RateLimitedError | undefined;
  /** The 429 to answer when some users were locked and none of the others matched (the lock may be why). */
  lockedRefusal: RateLimitedError | undefined;
}

const tooMany = (retryAfter: number) =>
  new RateLimitedError(`too many sign-in attempts; try again in ${Math.ceil(Math.max(retryAfter, 1) / 60)} minutes`, {
    retryAfterSeconds: Math.max(retryAfter, 1),
  });

/**
 * Counts one password (or TOTP) attempt for each user it is checked against (or the email that
 * names none) and the IP before it is checked. Counting first makes concurrent guesses count
 * too; a correct attempt then calls {@link forgiveSignInAttempt} for the user it proved. A user
 * over its limit is left out of the check, so guesses at it stop even while another user of the
 * same email can still sign in. In Postgres, so the limits hold across every process of the api role.
 */
export async function countSignInAttempt(sql: Sql, attempt: SignInAttempt): Promise<SignInCount> {
  const { rows } = await sql.query<{ bucket: string; failures: number; retry_after: number }>(
    `INSERT INTO dashboard_sign_in_failures AS f (bucket, failures, window_started_at)
     SELECT b, 1, now() FROM unnest(${BUCKETS_SQL}) AS b
     ON CONFLICT (bucket) DO UPDATE SET
       failures = CASE WHEN f.window_started_at < now() - make_interval(secs => $4) THEN 1 ELSE f.failures + 1 END,
       window_started_at = CASE WHEN f.window_started_at < now() - make_interval(secs => $4) THEN now() ELSE f.window_started_at END
     RETURNING bucket, failures, ceil(extract(epoch FROM f.window_started_at + make_interval(secs => $4) - now()))::int AS retry_after`,
    [...bucketValues(attempt), SIGN_IN_WINDOW_SECONDS],
  );
  const over = rows.filter((row) => row.failures > (row.bucket.startsWith('ip:') ? IP_ATTEMPTS : ACCOUNT_ATTEMPTS));
  const locked = over.filter((row) => row.bucket.startsWith('user:')).map((row) => row.bucket.slice('user:'.length));
  const wait = Math.max(0, ...over.map((row) => row.retry_after));
  const whole = over.some((row) => !row.bucket.startsWith('user:')) || (attempt.userIds.length > 0 && locked.length === attempt.userIds.length);
  return { locked, refusal: whole ? tooMany(wait) : undefined, lockedRefusal: locked.length > 0 ? tooMany(wait) : undefined };
}

/** {@link countSignInAttempt} for an attempt at one known user (re-authentication, a password change, a link's code): throws its 429. */
export async function takeSignInAttempt(sql: Sql, attempt: SignInAttempt): Promise<void> {
  const { refusal } = await countSignInAttempt(sql, attempt);
  if (refusal) throw refusal;
}

/**
 * After a correct attempt for `userId`: its count starts again and the IP gets its attempt back.
 * Other users the same attempt was checked against keep it (it was a wrong password for them).
 * `undoOnly` (a right password that still needs its TOTP code, or a choice of merchant) only
 * takes this attempt back: clearing the count there would let someone who has the password
 * reset it between code guesses.
 */
export async function forgiveSignInAttempt(sql: Sql, params: { ip: string; userId: string }, options: { undoOnly?: boolean } = {}): Promise<void> {
  const user = `user:${params.userId}`;
  const ip = `ip:${params.ip}`;
  if (options.undoOnly) {
    await sql.query('UPDATE dashboard_sign_in_failures SET failures = greatest(failures - 1, 0) WHERE bucket = ANY($1)', [[user, ip]]);
    return;
  }
  await sql.query('DELETE FROM dashboard_sign_in_failures WHERE bucket = $1', [user]);
  await sql.query('UPDATE dashboard_sign_in_failures SET failures = greatest(failures - 1, 0) WHERE bucket = $1', [ip]);
}
