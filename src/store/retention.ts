import type { Sql } from './index.ts';

/**
 * How long the daemon keeps rows that only serve as history or short-lived state. Stripe keeps
 * webhook attempts about 30 days; idempotency keys live at least 24 h (their own `expires_at`);
 * wallet challenges expire after ten minutes and are kept a day for support questions.
 */
const RETENTION = {
  webhookAttemptsDays: 30,
  walletChallengesDays: 1,
  /**
   * Settled Solana signature records. The per-account cursor is past them, so they are never
   * listed again; if an operator resets a cursor, re-ingesting is still exactly once, because
   * transfers are unique on (chain, signature, index).
   */
  solanaSignaturesDays: 7,
  /** Ended dashboard sessions (signed out, expired) and used or expired sign-in links: kept a month for incident review (their IPs). */
  dashboardSessionsDays: 30,
} as const;

/** Rows deleted per statement, so one pass never holds long locks or a huge transaction. */
const BATCH = 5_000;

/**
 * One retention pass: deletes expired idempotency keys, stale rate-limit windows, used or expired
 * wallet challenges, settled Solana signature records, webhook attempts older than the retention (their delivery rows, with
 * status and attempt count, stay), ended dashboard sessions, old sign-in links and spent sign-in throttle windows. Safe to run anywhere at any time; the worker role schedules it
 * hourly through pg-boss, which runs it once per schedule across all processes.
 * @returns rows deleted per table.
 */
export async function pruneExpiredRows(sql: Sql): Promise<Record<string, number>> {
  const statements: Record<string, string> = {
    idempotency_keys: `DELETE FROM idempotency_keys WHERE ctid IN (SELECT ctid FROM idempotency_keys WHERE expires_at < now() LIMIT ${BATCH})`,
    rate_limit_counters: `DELETE FROM rate_limit_counters WHERE window_start < now() - interval '5 minutes'`,
    wallet_challenges: `DELETE FROM wallet_challenges WHERE ctid IN (SELECT ctid FROM wallet_challenges WHERE expires_at < now() - make_interval(days => ${RETENTION.walletChallengesDays}) LIMIT ${BATCH})`,
    solana_signatures: `DELETE FROM solana_signatures WHERE ctid IN (SELECT ctid FROM solana_signatures WHERE commitment IN ('finalized', 'removed') AND updated_at < now() - make_interval(days => ${RETENTION.solanaSignaturesDays}) LIMIT ${BATCH})`,
    // Oldest first, so the plan is a scan of webhook_attempts_started (migration 021) from its
    // start: with statistics that still count the rows a large pass just deleted, an unordered
    // LIMIT made the planner pick a sequential scan of the whole table even with nothing to delete.
    webhook_attempts: `DELETE FROM webhook_attempts WHERE ctid IN (SELECT ctid FROM webhook_attempts WHERE started_at < now() - make_interval(days => ${RETENTION.webhookAttemptsDays}) ORDER BY started_at LIMIT ${BATCH})`,
    dashboard_sessions: `DELETE FROM dashboard_sessions WHERE ctid IN (SELECT ctid FROM dashboard_sessions WHERE least(coalesce(revoked_at, expires_at), expires_at) < now() - make_interval(days => ${RETENTION.dashboardSessionsDays}) LIMIT ${BATCH})`,
    dashboard_sign_in_links: `DELETE FROM dashboard_sign_in_links WHERE ctid IN (SELECT ctid FROM dashboard_sign_in_links WHERE expires_at < now() - make_interval(days => ${RETENTION.dashboardSessionsDays}) LIMIT ${BATCH})`,
    // A failure window lasts 15 minutes (src/accounts/signInThrottle.ts); an hour later the row counts for nothing.
    dashboard_sign_in_failures: `DELETE FROM dashboard_sign_in_failures WHERE ctid IN (SELECT ctid FROM dashboard_sign_in_failures WHERE window_started_at < now() - interval '1 hour' LIMIT ${BATCH})`,
  };
  const deleted: Record<string, number> = {};
  for (const [table, statement] of Object.entries(statements)) {
    let total = 0;
    for (;;) {
      const { rowCount } = await sql.query(statement);
      total += rowCount ?? 0;
      if ((rowCount ?? 0) < BATCH) break;
    }
    deleted[table] = total;
  }
  return deleted;
}
