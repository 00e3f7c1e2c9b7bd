import type { FastifyRequest } from 'fastify';
import { apiKeyActor, recordAudit, type Actor, type AuditAction } from '../accounts/index.ts';
import type { Sql } from '../store/index.ts';
import { authOf } from './auth.ts';

/** The caller of an authenticated request as the audit log names it: the key's id and hint, and the client IP. */
export function apiActor(request: FastifyRequest): Actor {
  const auth = authOf(request);
  return apiKeyActor({ keyId: auth.keyId, hint: auth.keyHint, ip: request.ip });
}

/**
 * Appends the audit entry of a change made through the API, in the change's transaction (`sql`),
 * so the entry and the change commit together and a refused request (4xx, rolled back) leaves
 * none. `livemode` is the mode of what changed; by default the key's, null for what has no mode
 * (receiving wallets). The dashboard's audit page shows and exports these with its own entries.
 */
export function auditApiChange(
  sql: Sql,
  request: FastifyRequest,
  action: AuditAction,
  params: { target?: string | null; livemode?: boolean | null; details?: Record<string, unknown> } = {},
): Promise<void> {
  const auth = authOf(request);
  return recordAudit(sql, {
    merchantId: auth.merchantId,
    actor: apiActor(request),
    action,
    target: params.target ?? null,
    livemode: params.livemode === undefined ? auth.livemode : params.livemode,
    details: params.details ?? {},
  });
}
