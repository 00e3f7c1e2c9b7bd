import { describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { newEvmWallet, newMerchant } from '../helpers/engine.ts';
import { addWallet } from '../../src/accounts/index.ts';
import { createSession, type CreateSessionParams } from '../../src/payments/sessions.ts';
import { dueLockKeys, dueOffsetBound } from '../../src/payments/dueAmounts.ts';
import { statementText, type SqlWithCopy } from '../../src/store/index.ts';

/**
 * What one session creation sends to Postgres (issue 28 goal 4, docs/benchmarks.md): each
 * statement is a round trip and a wake-up of a backend, a large part of a creation's CPU. A live
 * creation on a known inline wallet keeps the wallet and takes the due-amount locks in one
 * statement; the locks are still held when the INSERT runs, and a new wallet still gets
 * registered first.
 */
const db = useTestDatabase('payments_creation_round_trips');

/** Runs createSession in a transaction, recording each statement and the due-amount locks held before the INSERT. */
async function created(params: CreateSessionParams) {
  const sent: string[] = [];
  let heldAtInsert: string[] = [];
  const session = await db.store.transaction(async (sql) => {
    const recording: SqlWithCopy = {
      copyIn: sql.copyIn,
      async query(statement, values) {
        const text = statementText(statement);
        if (text.includes('INSERT INTO payment_sessions')) {
          const { rows } = await sql.query<{ key: string }>(
            "SELECT objid::text AS key FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted ORDER BY objid",
          );
          heldAtInsert = rows.map((row) => row.key);
        }
        sent.push(text.replace(/\s+/g, ' ').trim());
        return sql.query(statement, values);
      },
    };
    return createSession(recording, params);
  });
  return { session, sent, heldAtInsert };
}

/** The objids (low 32 bits of hashtextextended) of the two due-amount locks of a creation, as pg_locks shows them. */
async function dueLockObjids(params: { payTo: string; amount: bigint }): Promise<string[]> {
  const keys = dueLockKeys({ chain: 'polygon', currency: 'USDC', payTo: params.payTo, bucket: params.amount / dueOffsetBound(6) });
  const { rows } = await db.store.query<{ key: string }>(
    'SELECT ((hashtextextended(k, 0) & 4294967295)::bigint)::oid::text AS key FROM unnest($1::text[]) k ORDER BY 1',
    [keys],
  );
  return rows.map((row) => row.key).sort();
}

const base = (merchantId: string, wallet: string): CreateSessionParams => ({
  merchantId,
  livemode: true,
  amount: '25',
  currency: 'USDC',
  chain: 'polygon',
  merchantWallet: wallet,
  monitorWindowSeconds: 3600,
});

describe('a live creation on a known inline wallet', () => {
  test('sends three statements: the merchant checks, the wallet kept with the due-amount locks, the INSERT', async () => {
    const merchantId = await newMerchant(db.store);
    const wallet = newEvmWallet();
    await addWallet(db.store, { merchantId, chain: 'polygon', address: wallet, verifiedBy: 'operator' });
    const { session, sent, heldAtInsert } = await created(base(merchantId, wallet));
    expect(session.status).toBe('created');
    expect(sent).toHaveLength(3);
    expect(sent[1]).toMatch(/FROM wallets .*FOR KEY SHARE.*pg_advisory_xact_lock.*pg_advisory_xact_lock/);
    expect(sent[2]).toMatch(/^WITH held AS MATERIALIZED/);
    // The locks that serialise due-amount picks are held when the INSERT picks.
    expect(heldAtInsert.sort()).toEqual(await dueLockObjids({ payTo: wallet, amount: 25_000_000n }));
    // Two creations at one price still get two due amounts.
    const second = await created(base(merchantId, wallet));
    expect(second.session.amountDue).toBe(session.amountDue + 1n);
  });

  test('a new inline wallet is registered first, then locked as before', async () => {
    const merchantId = await newMerchant(db.store);
    const wallet = newEvmWallet();
    const { sent, heldAtInsert } = await created(base(merchantId, wallet));
    expect(sent.some((text) => text.startsWith('INSERT INTO wallets'))).toBe(true);
    const { rows } = await db.store.query('SELECT verified_at FROM wallets WHERE merchant_id = $1 AND address = $2', [merchantId, wallet]);
    expect(rows).toHaveLength(1);
    expect(heldAtInsert).toEqual(expect.arrayContaining(await dueLockObjids({ payTo: wallet, amount: 25_000_000n })));
  });
});

describe('concurrent live creations', () => {
  test('on a known and a new inline wallet at one price: every one is created, each with its own due amount', async () => {
    const merchantId = await newMerchant(db.store);
    const known = newEvmWallet();
    const fresh = newEvmWallet();
    await addWallet(db.store, { merchantId, chain: 'polygon', address: known, verifiedBy: 'operator' });
    const sessions = await Promise.all(
      Array.from({ length: 30 }, (_, i) => db.store.transaction((sql) => createSession(sql, base(merchantId, i % 3 === 0 ? fresh : known)))),
    );
    for (const wallet of [known, fresh]) {
      const due = sessions.filter((s) => s.payTo === wallet).map((s) => s.amountDue);
      expect(new Set(due).size).toBe(due.length);
    }
    expect(sessions).toHaveLength(30);
  });
});
