import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { prepared, type Sql, type Store } from '../store/index.ts';
import { badRequest, conflict, unprocessable } from '../internal/errors.ts';
import { sha256Hex } from '../internal/crypto.ts';
import { idempotencyKeyLockText } from '../store/lockKeys.ts';

/** The header that carries the key (Stripe's name; the spec leaves it open). */
const IDEMPOTENCY_HEADER = 'idempotency-key';

/** Longest accepted key: the 255 characters (Stripe allows 255 too). */
const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

/** Keys are kept 24 hours after first use, as Stripe does; a retry after that creates anew. */
const RETENTION_SECONDS = 24 * 3600;

/**
 * A claim is held this long while the first request runs. Requests finish in well under a
 * second; 60 s outlasts any of them, and lets a retry take over a claim whose process died.
 */
const CLAIM_SECONDS = 60;

/** Expired rows are deleted as requests pass, 1 in 100 (no timer, any process). */
const CLEANUP_PROBABILITY = 0.01;

declare module 'fastify' {
  interface FastifyRequest {
    idempotency: (IdempotencyScope & { key: string; saved?: boolean; inTransaction?: boolean }) | null;
  }
  interface FastifyContextConfig {
    /**
     * `in-handler`: the handler claims the key inside its own transaction
     * ({@link claimIdempotencyKeyInTransaction}), so the claim, the change and the stored answer
     * commit together: one durable commit per request instead of two. For the hot creation routes.
     */
    idempotency?: 'in-handler';
  }
}

/** JSON with object keys sorted, so `{"a":1,"b":2}` and `{"b":2,"a":1}` are the same request. */
function canonicalJson(root: unknown): string {
  // Iterative, not recursive: a body of a few KiB can nest thousands of levels, deeper than the
  // call stack (a recursive walk threw RangeError, a 500; found by bench/chaos/fuzz.ts).
  type Item = { text: string } | { value: unknown };
  const out: string[] = [];
  const stack: Item[] = [{ value: root }];
  const pushAll = (items: Item[]) => {
    for (let i = items.length - 1; i >= 0; i--) stack.push(items[i]!);
  };
  while (stack.length > 0) {
    const item = stack.pop()!;
    if ('text' in item) {
      out.push(item.text);
      continue;
    }
    const { value } = item;
    if (Array.isArray(value)) {
      pushAll([{ text: '[' }, ...value.flatMap((inner, i): Item[] => (i > 0 ? [{ text: ',' }, { value: inner }] : [{ value: inner }])), { text: ']' }]);
    } else if (value && typeof value === 'object') {
      const keys = Object.keys(value).sort();
      const entries = keys.flatMap((key, i): Item[] => [
        ...(i > 0 ? [{ text: ',' }] : []),
        { text: `${JSON.stringify(key)}:` },
        { value: (value as Record<string, unknown>)[key] },
      ]);
      pushAll([{ text: '{' }, ...entries, { text: '}' }]);
    } else {
      out.push(JSON.stringify(value) ?? 'null');
    }
  }
  return out.join('');
}

/** What identifies "the same request": method, path without the `/api/v1` or `/v1` prefix, body. */
function requestFingerprint(request: FastifyRequest): string {
  const path = request.url.split('?')[0]!.replace(/^\/(api\/)?v1(?=\/)/, '');
  return sha256Hex(`${request.method} ${path}\n${canonicalJson(request.body ?? null)}`);
}

/** Whose keys: one account in one mode (Stripe's scope), whichever of its API keys sends them. */
export interface IdempotencyScope {
  merchantId: string;
  livemode: boolean;
  /** The key that sent the request, recorded on the first claim. */
  apiKeyId: string;
}

/** The claim (prepared, as the save below: they run at every request that carries a key). */
const CLAIM_KEY = prepared(
  `INSERT INTO idempotency_keys (merchant_id, livemode, api_key_id, idempotency_key, request_hash, state, locked_until, expires_at)
   VALUES ($6, $7, $1, $2, $3, 'running', now() + make_interval(secs => $4), now() + make_interval(secs => $5))
   ON CONFLICT (merchant_id, livemode, idempotency_key) DO UPDATE SET
     api_key_id = excluded.api_key_id, request_hash = excluded.request_hash, state = 'running', locked_until = excluded.locked_until,
     expires_at = excluded.expires_at, created_at = now(), response_status = NULL, response_body = NULL, response_content_type = NULL
   WHERE idempotency_keys.expires_at < now()
      OR (idempotency_keys.state = 'running' AND idempotency_keys.locked_until < now() AND idempotency_keys.request_hash = excluded.request_hash)
   RETURNING 1`,
);
const SAVE_JSON_RESPONSE = prepared(
  `UPDATE idempotency_keys SET state = 'done', response_status = $4, response_body = $5, response_content_type = 'application/json; charset=utf-8'
   WHERE merchant_id = $1 AND livemode = $2 AND idempotency_key = $3`,
);

export type Claim =
  | { kind: 'claimed' }
  | { kind: 'replay'; status: number; body: string; contentType: string | null }
  | { kind: 'running' }
  | { kind: 'mismatch' };

/**
 * Claims (merchant, mode, key) for a request with `fingerprint`. The primary key makes exactly one
 * concurrent claimer win across every process sharing the database; the others see `running`,
 * the stored response (`replay`) or a different fingerprint (`mismatch`).
 */
async function claimIdempotencyKey(sql: Sql, params: IdempotencyScope & { key: string; fingerprint: string }): Promise<Claim> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const claimed = await sql.query(CLAIM_KEY, [
      params.apiKeyId,
      params.key,
      params.fingerprint,
      CLAIM_SECONDS,
      RETENTION_SECONDS,
      params.merchantId,
      params.livemode,
    ]);
    if (claimed.rowCount === 1) return { kind: 'claimed' };
    const { rows } = await sql.query<{
      request_hash: string;
      state: string;
      response_status: number | null;
      response_body: string | null;
      response_content_type: string | null;
    }>(
      `SELECT request_hash, state, response_status, response_body, response_content_type FROM idempotency_keys WHERE merchant_id = $1 AND livemode = $2 AND idempotency_key = $3`,
      [params.merchantId, params.livemode, params.key],
    );
    const row = rows[0];
    if (!row) continue; // the first request failed and released the key between our two statements
    if (row.request_hash !== params.fingerprint) return { kind: 'mismatch' };
    if (row.state === 'running') return { kind: 'running' };
    return { kind: 'replay', status: row.response_status!, body: row.response_body ?? '', contentType: row.response_content_type };
  }
  return { kind: 'running' };
}

/**
 * The claim for a route with `config.idempotency = 'in-handler'`, as the first statement of the
 * handler's transaction `sql`; null when the request carries no key (the preHandler validated it).
 * A transaction-level advisory lock on the key comes first: while another request holds the key
 * in its transaction (its claim not committed yet), this one answers `running` (409) at once
 * instead of waiting on the key's unique index; once that request committed, the answer is the
 * replay, and if it rolled back, the key is free. A failure anywhere rolls the claim back with
 * the change: no claim is left `running` for a retry to wait out.
 */
export async function claimIdempotencyKeyInTransaction(sql: Sql, request: FastifyRequest): Promise<Claim | null> {
  const key = request.headers[IDEMPOTENCY_HEADER];
  if (typeof key !== 'string' || !request.auth) return null;
  const scope: IdempotencyScope = { merchantId: request.auth.merchantId, livemode: request.auth.livemode, apiKeyId: request.auth.keyId };
  // A retried transaction (store.transaction after a deadlock) claims again: an earlier attempt's
  // claim was rolled back and must not mark this request's answer as its own (Idempotent-Replayed).
  request.idempotency = null;
  const { rows } = await sql.query<{ free: boolean }>(LOCK_KEY, [idempotencyKeyLockText({ ...scope, key })]);
  if (!rows[0]!.free) return { kind: 'running' };
  const claim = await claimIdempotencyKey(sql, { ...scope, key, fingerprint: requestFingerprint(request) });
  if (claim.kind === 'claimed') request.idempotency = { ...scope, key, inTransaction: true };
  return claim;
}

const LOCK_KEY = prepared('SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0)) AS free');

/**
 * Answers a claim that did not go to this request: 422 for another request under the key, 409
 * with Retry-After while the first still runs, or the first answer replayed.
 */
export function answerUnclaimed(reply: FastifyReply, claim: Exclude<Claim, { kind: 'claimed' }>): FastifyReply {
  switch (claim.kind) {
    case 'mismatch':
      throw unprocessable('this Idempotency-Key was already used with a different request (method, path or body); use a new key');
    case 'running':
      // Stripe answers the same 409; Retry-After tells an SDK's retry loop when to come back.
      reply.header('Retry-After', '1');
      throw conflict('a request with this Idempotency-Key is still being processed; retry shortly');
    case 'replay':
      reply.status(claim.status).header('Idempotent-Replayed', 'true');
      if (claim.contentType) reply.header('content-type', claim.contentType);
      return reply.send(claim.body);
  }
}

/**
 * Stores the answer of a claimed request inside the handler's own transaction `sql`, so the
 * change and its replayable answer commit together: a process dying between the commit and the
 * reply cannot lead a retry to repeat the change. Routes that do not call it are still covered:
 * their 2xx answer is stored just after it is produced (onSend).
 */
export async function saveIdempotentResponse(sql: Sql, request: FastifyRequest, status: number, body: unknown): Promise<void> {
  const idempotency = request.idempotency;
  if (!idempotency) return;
  await sql.query(SAVE_JSON_RESPONSE, [idempotency.merchantId, idempotency.livemode, idempotency.key, status, JSON.stringify(body)]);
  idempotency.saved = true;
}

/**
 * Idempotency for every authenticated POST: `Idempotency-Key` (1..255 characters), scoped to the
 * account and mode (any of its API keys), kept 24 h. Same key and body: the first response is replayed with
 * `Idempotent-Replayed: true`; different body: 422; first still running: 409. Only 2xx responses
 * are stored: an error (validation included) releases the key, so nothing is stored for it and a
 * corrected request may reuse the key.
 */
export function registerIdempotency(app: FastifyInstance, params: { store: Store }): void {
  app.decorateRequest('idempotency', null);
  // Every authenticated POST documents (and validates) the header in its schema, so it shows in
  // the OpenAPI document of every module's routes, not only this one's.
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (!methods.includes('POST') || route.config?.auth === 'none' || route.url.startsWith('/docs')) return;
    const schema = (route.schema ?? {}) as Record<string, unknown>;
    if (schema.headers) return;
    route.schema = {
      ...schema,
      headers: {
        type: 'object',
        properties: {
          [IDEMPOTENCY_HEADER]: {
            type: 'string',
            minLength: 1,
            maxLength: MAX_IDEMPOTENCY_KEY_LENGTH,
            description:
              'Makes a retry safe: the same key (per account and mode, whichever API key sends it; kept 24 h) with the same request replays the first 2xx answer with `Idempotent-Replayed: true`; with a different request: 422; while the first still runs: 409 with Retry-After: 1.',
            'x-error': `must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`,
          },
        },
      },
    };
  });
  app.addHook('preHandler', async (request, reply) => {
    if (request.method !== 'POST' || !request.auth) return;
    const header = request.headers[IDEMPOTENCY_HEADER];
    if (header === undefined) return;
    if (typeof header !== 'string' || header.length === 0 || header.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
      throw badRequest(`Idempotency-Key must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`);
    }
    // On the pool, never in a creation's transaction (`in-handler`): a failure swallowed there
    // (a deadlock with a claim taking over an expired row) would leave that transaction aborted.
    if (Math.random() < CLEANUP_PROBABILITY) {
      await params.store
        .query(`DELETE FROM idempotency_keys WHERE ctid IN (SELECT ctid FROM idempotency_keys WHERE expires_at < now() LIMIT 1000)`)
        .catch(() => {});
    }
    if (request.routeOptions.config?.idempotency === 'in-handler') return;
    const scope: IdempotencyScope = { merchantId: request.auth.merchantId, livemode: request.auth.livemode, apiKeyId: request.auth.keyId };
    const claim = await claimIdempotencyKey(params.store, { ...scope, key: header, fingerprint: requestFingerprint(request) });
    if (claim.kind === 'claimed') {
      request.idempotency = { ...scope, key: header };
      return;
    }
    return answerUnclaimed(reply, claim);
  });
  app.addHook('onSend', async (request, reply, payload) => {
    const idempotency = request.idempotency;
    if (!idempotency) return payload;
    request.idempotency = null;
    const success = reply.statusCode >= 200 && reply.statusCode < 300;
    if (success && idempotency.saved) {
      // Stored in the handler's transaction already.
    } else if (idempotency.inTransaction) {
      // Claimed in the handler's transaction, which failed: its rollback took the claim with it.
    } else if (success && (typeof payload === 'string' || payload === undefined || payload === null)) {
      const contentType = reply.getHeader('content-type');
      await params.store.query(
        `UPDATE idempotency_keys SET state = 'done', response_status = $4, response_body = $5, response_content_type = $6
         WHERE merchant_id = $1 AND livemode = $2 AND idempotency_key = $3`,
        [idempotency.merchantId, idempotency.livemode, idempotency.key, reply.statusCode, payload ?? '', typeof contentType === 'string' ? contentType : null],
      );
    } else {
      await params.store.query(`DELETE FROM idempotency_keys WHERE merchant_id = $1 AND livemode = $2 AND idempotency_key = $3 AND state = 'running'`, [
        idempotency.merchantId,
        idempotency.livemode,
        idempotency.key,
      ]);
    }
    reply.header('Idempotent-Replayed', 'false');
    return payload;
  });
}
