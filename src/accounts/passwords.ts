import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { badRequest } from '../internal/errors.ts';

/**
 * scrypt cost (RFC 7914) for dashboard passwords: N = 2^15, r = 8, p = 1 uses 128·N·r = 32 MiB
 * of memory and about 0.1 s of one core per hash, the OWASP Password Storage Cheat Sheet's
 * minimum for scrypt (N=2^17 at 128 MiB is its first row; 2^15 keeps a 2-core host answering
 * sign-ins while a guesser with a GPU still pays 32 MiB per guess). Stored with every hash, so
 * raising it later only affects new hashes and old ones keep verifying.
 */
export const SCRYPT_PARAMS = { N: 2 ** 15, r: 8, p: 1 } as const;
const KEY_LENGTH = 32;
const SALT_LENGTH = 16;

/** Shortest password accepted: NIST SP 800-63B asks for at least 8; 12 makes guessing far dearer. */
export const MIN_PASSWORD_LENGTH = 12;
/** Longest: scrypt takes any length, but a megabyte "password" is a denial of service, not a secret. */
export const MAX_PASSWORD_LENGTH = 200;

function scryptAsync(password: string, salt: Buffer, params: { N: number; r: number; p: number }): Promise<Buffer> {
  const options: ScryptOptions = { ...params, maxmem: 256 * params.N * params.r };
  return new Promise((resolve, reject) =>
    scrypt(password.normalize('NFKC'), salt, KEY_LENGTH, options, (error, key) => (error ? reject(error) : resolve(key))),
  );
}

/** Refuses a password that is too short or too long, with the message the form shows. */
export function checkNewPassword(password: string, confirmation?: string): void {
  if (password.length < MIN_PASSWORD_LENGTH) throw badRequest(`the password must have at least ${MIN_PASSWORD_LENGTH} characters`);
  if (password.length > MAX_PASSWORD_LENGTH) throw badRequest(`the password must have at most ${MAX_PASSWORD_LENGTH} characters`);
  if (confirmation !== undefined && confirmation !== password) throw badRequest('the two passwords differ');
}

/** `scrypt$N$r$p$salt$hash` (base64url): the parameters travel with the hash. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_LENGTH);
  const key = await scryptAsync(password, salt, SCRYPT_PARAMS);
  return ['scrypt', SCRYPT_PARAMS.N, SCRYPT_PARAMS.r, SCRYPT_PARAMS.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

/** A hash of a random password: verified against when no user matches, so a miss costs the same time as a hit. */
const DECOY_HASH = hashPassword(randomBytes(16).toString('hex'));

/**
 * Whether `password` matches `stored` (constant-time comparison of the derived keys). A null
 * `stored` (unknown user, or no password set yet) still spends one scrypt, then answers false.
 */
export async function verifyPassword(password: string, stored: string | null | undefined): Promise<boolean> {
  const text = stored ?? (await DECOY_HASH);
  const [kind, n, r, p, salt, hash] = text.split('$');
  if (kind !== 'scrypt' || !salt || !hash || password.length > MAX_PASSWORD_LENGTH) return false;
  const expected = Buffer.from(hash, 'base64url');
  const actual = await scryptAsync(password, Buffer.from(salt, 'base64url'), { N: Number(n), r: Number(r), p: Number(p) });
  return actual.length === expected.length && timingSafeEqual(actual, expected) && stored != null;
}
