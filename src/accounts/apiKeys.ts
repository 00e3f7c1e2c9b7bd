import type { Sql } from '../store/index.ts';
import { constantTimeEqual, newId, randomBase62, sha256Hex } from '../internal/crypto.ts';
import { badRequest } from '../internal/errors.ts';

/**
 * What a key may do. `read` covers every GET; `write` covers every POST, PATCH and DELETE.
 * A full key has both; a read-only key (for dashboards, reporting) has `read` alone.
 */
export const SCOPES = ['read', 'write'] as const;
export type Scope = (typeof SCOPES)[number];

/**
 * The spec's key prefixes (§5). New keys use `svc_test_` / `svc_live_` (Interface A's), or the
 * `svc_sk_` / `svc_sk_live_` style on request; every prefix is accepted by both interfaces.
 * Order matters when parsing: `svc_sk_live_` must be tried before `svc_sk_`.
 */
const KEY_PREFIXES = [
  { prefix: 'svc_sk_live_', livemode: true, style: 'sk' },
  { prefix: 'svc_live_', livemode: true, style: 'plain' },
  { prefix: 'svc_test_', livemode: false, style: 'plain' },
  { prefix: 'svc_sk_', livemode: false, style: 'sk' },
] as const;
export type KeyStyle = 'plain' | 'sk';

/** 32 base62 characters: 190 bits, beyond guessing, so a plain SHA-256 is a safe stored form. */
const SECRET_LENGTH = 32;

/** Longer text is no key of ours (the longest prefix and the secret are far below it). */
export const MAX_KEY_LENGTH = 128;

export interface ApiKey {
  id: string;
  merchantId: string;
  livemode: boolean;
  /** `svc_test_…abcd`: enough to recognise a key, useless to use it. */
  hint: string;
  scopes: Scope[];
  description: string | null;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}

interface ApiKeyRow {
  id: string;
  merchant_id: string;
  livemode: boolean;
  prefix: string;
  last4: string;
  secret_hash: string;
  scopes: Scope[];
  description: string | null;
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

const COLUMNS = 'id, merchant_id, livemode, prefix, last4, secret_hash, scopes, description, created_at, last_used_at, revoked_at';

const toApiKey = (row: ApiKeyRow): ApiKey => ({
  id: row.id,
  merchantId: row.merchant_id,
  livemode: row.livemode,
  hint: `${row.prefix}…${row.last4}`,
  scopes: row.scopes,
  description: row.description,
  createdAt: row.created_at,
  lastUsedAt: row.last_used_at,
  revokedAt: row.revoked_at,
});

/** The mode a key's text claims, from its prefix; `undefined` for text that is not a key of ours. */
export function parseKeyPrefix(key: string): { prefix: string; livemode: boolean } | undefined {
  const match = KEY_PREFIXES.find((candidate) => key.startsWith(candidate.prefix));
  if (!match) return undefined;
  const secret = key.slice(match.prefix.length);
  if (!/^[0-9A-Za-z]+$/.test(secret)) return undefined;
  return { prefix: match.prefix, livemode: match.livemode };
}

/**
 * Creates a key and returns its full text once; only its hash is stored.
 */
export async function createApiKey(
  sql: Sql,
  params: { merchantId: string; livemode: boolean; scopes?: Scope[]; description?: string; style?: KeyStyle },
): Promise<{ apiKey: ApiKey; secret: string }> {
  const style = params.style ?? 'plain';
  const { prefix } = KEY_PREFIXES.find((candidate) => candidate.livemode === params.livemode && candidate.style === style)!;
  const secret = prefix + randomBase62(SECRET_LENGTH);
  const scopes = [...new Set(params.scopes ?? SCOPES)].sort() as Scope[];
  const { rows } = await sql.query<ApiKeyRow>(
    `INSERT INTO api_keys (id, merchant_id, livemode, prefix, last4, secret_hash, scopes, description)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${COLUMNS}`,
    [newId('key'), params.merchantId, params.livemode, prefix, secret.slice(-4), sha256Hex(secret), scopes, params.description ?? null],
  );
  return { apiKey: toApiKey(rows[0]!), secret };
}

/** Keys, oldest first: all, or one merchant's, optionally of one mode. */
export async function listApiKeys(sql: Sql, params: { merchantId?: string; livemode?: boolean } = {}): Promise<ApiKey[]> {
  const { rows } = await sql.query<ApiKeyRow>(
    `SELECT ${COLUMNS} FROM api_keys WHERE ($1::text IS NULL OR merchant_id = $1) AND ($2::boolean IS NULL OR livemode = $2) ORDER BY created_at, id`,
    [params.merchantId ?? null, params.livemode ?? null],
  );
  return rows.map(toApiKey);
}

/** One merchant's key by id (another merchant's id is undefined, as an unknown one). */
export async function getApiKey(sql: Sql, params: { merchantId: string; id: string }): Promise<ApiKey | undefined> {
  const { rows } = await sql.query<ApiKeyRow>(`SELECT ${COLUMNS} FROM api_keys WHERE id = $1 AND merchant_id = $2`, [params.id, params.merchantId]);
  return rows[0] && toApiKey(rows[0]);
}

/** Longest key description: a note to recognise a key by, not a document. */
export const MAX_KEY_DESCRIPTION_LENGTH = 200;

/**
 * Checks what a person asks for when creating a key (the dashboard's form; the CLI checks its
 * flags the same way): known scopes, at least one, and a description of sensible length.
 */
export function checkKeyRequest(params: { scopes: string[]; description?: string }): { scopes: Scope[]; description?: string } {
  const unknown = params.scopes.filter((scope) => !(SCOPES as readonly string[]).includes(scope));
  if (params.scopes.length === 0 || unknown.length > 0) throw badRequest(`scopes must be one or more of ${SCOPES.join(', ')}`);
  const description = params.description?.trim();
  if (description && description.length > MAX_KEY_DESCRIPTION_LENGTH) throw badRequest(`description must be at most ${MAX_KEY_DESCRIPTION_LENGTH} characters`);
  return { scopes: params.scopes as Scope[], ...(description ? { description } : {}) };
}

/**
 * The channel on which Postgres announces a change that can turn a key away (revocation, scopes,
 * deletion), with the key's id, at commit (migrations/016_api_key_change_notify.sql): processes
 * that cache keys listen on it, whichever process or person made the change.
 */
export const API_KEY_CHANGES_CHANNEL = 'svc_api_key_changes';

const localListeners = new Set<(keyId: string) => void>();

/**
 * Calls `listener` with a key's id when this process revokes it, at once (the database's
 * notification reaches every process a moment later; this one need not wait for it).
 * @returns a function that removes the listener.
 */
export function onApiKeyChange(listener: (keyId: string) => void): () => void {
  localListeners.add(listener);
  return () => localListeners.delete(listener);
}

/**
 * Revokes a key; revoking twice keeps the first revocation time. With `merchantId` only that
 * merchant's key is touched (the dashboard: another merchant's id is unknown). @returns the key,
 * or undefined when unknown.
 */
export async function revokeApiKey(sql: Sql, id: string, params: { merchantId?: string } = {}): Promise<ApiKey | undefined> {
  const { rows } = await sql.query<ApiKeyRow>(
    `UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1 AND ($2::text IS NULL OR merchant_id = $2) RETURNING ${COLUMNS}`,
    [id, params.merchantId ?? null],
  );
  for (const listener of localListeners) listener(id);
  return rows[0] && toApiKey(rows[0]);
}

export type AuthResult = { ok: true; apiKey: ApiKey } | { ok: false; reason: 'malformed' | 'unknown' | 'revoked' };

/**
 * Resolves a presented key to its record, without writing anything. The lookup is by hash, so the
 * secret never reaches a query or an index; the stored hash is compared again in constant time.
 */
export async function findApiKey(sql: Sql, presented: string): Promise<AuthResult> {
  const parsed = parseKeyPrefix(presented);
  if (!parsed || presented.length > MAX_KEY_LENGTH) return { ok: false, reason: 'malformed' };
  const hash = sha256Hex(presented);
  const { rows } = await sql.query<ApiKeyRow>(`SELECT ${COLUMNS} FROM api_keys WHERE secret_hash = $1`, [hash]);
  const row = rows[0];
  if (!row || !constantTimeEqual(row.secret_hash, hash) || row.prefix !== parsed.prefix) return { ok: false, reason: 'unknown' };
  if (row.revoked_at) return { ok: false, reason: 'revoked' };
  return { ok: true, apiKey: toApiKey(row) };
}

/** How often a key's `last_used_at` is written at most: it says "in use lately", not each request. */
export const LAST_USE_INTERVAL_MS = 60_000;

/**
 * Records that the key `keyId` was used now, unless the database already says so for the last minute
 * (whichever process wrote it). Callers skip the call within {@link LAST_USE_INTERVAL_MS} of
 * their last one, so authentication does not cost a write per request.
 */
export async function recordApiKeyUse(sql: Sql, keyId: string): Promise<void> {
  await sql.query(`UPDATE api_keys SET last_used_at = now() WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - make_interval(secs => $2))`, [
    keyId,
    LAST_USE_INTERVAL_MS / 1000,
  ]);
}

/**
 * {@link findApiKey}, then records the use when `last_used_at` is older than a minute (at most
 * one write per key a minute). The HTTP layer uses a cache in front of this (src/api/auth.ts).
 */
export async function authenticateApiKey(sql: Sql, presented: string): Promise<AuthResult> {
  const result = await findApiKey(sql, presented);
  if (!result.ok) return result;
  const { lastUsedAt } = result.apiKey;
  if (!lastUsedAt || Date.now() - lastUsedAt.getTime() > LAST_USE_INTERVAL_MS) {
    await recordApiKeyUse(sql, result.apiKey.id);
    return { ok: true, apiKey: { ...result.apiKey, lastUsedAt: new Date() } };
  }
  return result;
}

export function hasScope(apiKey: ApiKey, scope: Scope): boolean {
  return apiKey.scopes.includes(scope);
}
