import { randomBytes } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import {
  createApiKey,
  createDashboardSession,
  createMerchant,
  createSignInLink,
  createWalletChallenge,
  inviteDashboardUser,
  OPERATOR,
} from '../../src/accounts/index.ts';
import { createSecretBox } from '../../src/internal/crypto.ts';
import { appendEvent } from '../../src/payments/outbox.ts';
import { pruneExpiredRows } from '../../src/store/retention.ts';

const db = useTestDatabase('retention');

async function count(table: string): Promise<number> {
  const { rows } = await db.store.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`);
  return rows[0]!.n;
}

describe('pruneExpiredRows()', () => {
  test('deletes only what is past its retention, and keeps delivery summaries', async () => {
    const { merchant } = await createMerchant(db.store, createSecretBox(randomBytes(32)), { name: 'Retained' });
    const { apiKey } = await createApiKey(db.store, { merchantId: merchant.id, livemode: false });
    for (const [key, expires] of [
      ['old', "now() - interval '1 hour'"],
      ['fresh', "now() + interval '23 hours'"],
    ]) {
      await db.store.query(
        `INSERT INTO idempotency_keys (merchant_id, livemode, api_key_id, idempotency_key, request_hash, state, locked_until, created_at, expires_at)
         VALUES ($3, false, $1, $2, 'h', 'done', now(), now(), ${expires})`,
        [apiKey.id, key, apiKey.merchantId],
      );
    }
    await db.store.query(
      `INSERT INTO rate_limit_counters (bucket, window_start, count) VALUES ('k', now() - interval '1 hour', 3), ('k', date_trunc('minute', now()), 1)`,
    );
    await createWalletChallenge(db.store, {
      merchantId: merchant.id,
      chain: 'polygon',
      address: '0x52908400098527886E0F7030069857D2E4169EE7',
      now: new Date(Date.now() - 3 * 86400_000),
    });
    await createWalletChallenge(db.store, { merchantId: merchant.id, chain: 'polygon', address: '0x52908400098527886E0F7030069857D2E4169EE7' });
    const event = await db.store.transaction((sql) => appendEvent(sql, { merchantId: merchant.id, livemode: false, type: 'payment.expired', data: {} }));
    await db.store.query(
      `INSERT INTO webhook_deliveries (id, event_id, merchant_id, livemode, url, origin, target, status, attempt_count, completed_at)
       VALUES ('wdl_1', $1, $2, false, 'https://example.com/h', 'dispatch', 'session', 'succeeded', 2, now())`,
      [event.id, merchant.id],
    );
    for (const [number, age] of [
      [1, '40 days'],
      [2, '1 day'],
    ]) {
      await db.store.query(
        `INSERT INTO webhook_attempts (id, delivery_id, event_id, attempt_number, url, request_headers, request_body, duration_ms, succeeded, started_at)
         VALUES ($1, 'wdl_1', $2, $3, 'https://example.com/h', '{}', '{}', 5, $4, now() - $5::interval)`,
        [`wat_${number}`, event.id, number, number === 2, age],
      );
    }

    await db.store.query(
      `INSERT INTO solana_token_accounts (address, owner, mint, token_program, associated, floor_slot) VALUES ('TokAcct1', 'Owner1', 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v', 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA', true, 0)`,
    );
    for (const [signature, commitment, age] of [
      ['old-final', 'finalized', '8 days'],
      ['old-pending', 'confirmed', '8 days'],
      ['new-final', 'finalized', '1 day'],
    ]) {
      await db.store.query(
        `INSERT INTO solana_signatures (token_account, signature, slot, commitment, failed, updated_at) VALUES ('TokAcct1', $1, 1, $2, false, now() - $3::interval)`,
        [signature, commitment, age],
      );
    }

    // Dashboard: a session ended 31 days ago and a live one; the invitation's link and one more expired 31 days ago and a fresh one; a spent and a current throttle window.
    const { user } = await inviteDashboardUser(db.store, { merchantId: merchant.id, email: 'retained@example.test', role: 'owner', actor: OPERATOR });
    const ended = await createDashboardSession(db.store, { userId: user.id });
    await createDashboardSession(db.store, { userId: user.id });
    await db.store.query(`UPDATE dashboard_sessions SET revoked_at = now() - interval '31 days' WHERE id = $1`, [ended.id]);
    await createSignInLink(db.store, user.id);
    await db.store.query(`UPDATE dashboard_sign_in_links SET expires_at = now() - interval '31 days'`);
    await createSignInLink(db.store, user.id);
    await db.store.query(
      `INSERT INTO dashboard_sign_in_failures (bucket, failures, window_started_at) VALUES ('ip:old', 3, now() - interval '2 hours'), ('ip:new', 1, now())`,
    );

    expect(await pruneExpiredRows(db.store)).toEqual({
      idempotency_keys: 1,
      rate_limit_counters: 1,
      wallet_challenges: 1,
      solana_signatures: 1,
      webhook_attempts: 1,
      dashboard_sessions: 1,
      dashboard_sign_in_links: 2,
      dashboard_sign_in_failures: 1,
    });
    // Still waiting for finality: kept however old.
    expect((await db.store.query('SELECT signature FROM solana_signatures ORDER BY signature')).rows.map((row) => row.signature)).toEqual([
      'new-final',
      'old-pending',
    ]);
    expect(await count('idempotency_keys')).toBe(1);
    expect(await count('rate_limit_counters')).toBe(1);
    expect(await count('wallet_challenges')).toBe(1);
    expect(await count('webhook_attempts')).toBe(1);
    expect(await count('webhook_deliveries')).toBe(1);
    expect(await count('dashboard_sessions')).toBe(1);
    expect(await count('dashboard_sign_in_links')).toBe(1);
    expect(await count('dashboard_sign_in_failures')).toBe(1);
    // A second pass finds nothing.
    expect(Object.values(await pruneExpiredRows(db.store))).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
  });
});
