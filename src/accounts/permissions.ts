import { forbidden } from '../internal/errors.ts';
import type { Role } from './dashboardUsers.ts';

/**
 * What each dashboard role may do: the one table the server checks for every dashboard action
 * (issue 15). Pages ask `ctx.requirePermission(...)` (or name the permission on the route); the
 * same table hides buttons a role cannot use, but hiding is never the check.
 *
 * - `read`: every page that only shows data, in both modes (keys are shown as hints only).
 * - `keys.test`: create and revoke sandbox API keys.
 * - `keys.live`: create and revoke live API keys; owners only, and with the password entered in
 *   the last 10 minutes. A developer sees live keys (hint, scopes, last use) but cannot create
 *   or revoke one: a live key moves real payments, and revoking one stops production traffic.
 * - `webhooks.manage`: endpoints, events, secrets, resends, test events. A new or changed URL
 *   and a secret rotation also want the recent password, in both modes (money-routing).
 * - `links.manage`: create and deactivate payment links.
 * - `sandbox.use`: simulate sandbox payments.
 * - `payments.manage`: refunds (reject, pay, record) and attributing unmatched transfers.
 * - `wallets.manage`: receiving wallets and the default per chain (recent password).
 * - `settings.manage`: payment tolerance, bridged tokens, require two-factor.
 * - `users.manage`: invite, change role, disable, new sign-in links.
 * - `audit.read`: the audit log and its export.
 */
export const PERMISSIONS = {
  read: ['owner', 'developer', 'viewer'],
  'keys.test': ['owner', 'developer'],
  'keys.live': ['owner'],
  'webhooks.manage': ['owner', 'developer'],
  'links.manage': ['owner', 'developer'],
  'sandbox.use': ['owner', 'developer'],
  'payments.manage': ['owner'],
  'wallets.manage': ['owner'],
  'settings.manage': ['owner'],
  'users.manage': ['owner'],
  'audit.read': ['owner'],
} as const satisfies Record<string, readonly Role[]>;
export type Permission = keyof typeof PERMISSIONS;

/** Whether `role` has `permission`. */
export function roleCan(role: Role, permission: Permission): boolean {
  return (PERMISSIONS[permission] as readonly Role[]).includes(role);
}

/** Throws a 403 unless `role` has `permission`. */
export function requirePermission(role: Role, permission: Permission): void {
  if (!roleCan(role, permission)) throw forbidden(`your role (${role}) may not do this (${permission})`);
}
