import { describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/waitFor.ts';
import { newEvmWallet, newMerchant } from '../helpers/engine.ts';
import { addWallet } from '../../src/accounts/index.ts';
import { createSession, type CreateSessionParams } from '../../src/payments/sessions.ts';
import { dueLockKeys, dueOffsetBound } from '../../src/payments/dueAmounts.ts';
import type { QueryResultRow } from 'pg';
import { statementText, type PreparedStatement, type SqlWithCopy } from '../../src/store/index.ts';

/**
 * What one session creation sends to Postgres (issue 28 goal 4, docs/benchmarks.md): each
 * statement is a round trip and a wake-up of a backend, a large part of a creation's CPU. A live
 * creation on a known inline wallet is one statement (merchant checks, the wallet kept, the
 * due-amount locks, the pick and the INSERT: sessionSql.ts `createAmountSession`); the locks are
 * still held afterwards, the pick sees a session committed while it waited on them, and a new
 * wallet still gets registered first.
 */
const db = useTestDatabase('payments_creation_round_trips');

/** The advisory locks this connection holds (their objids, as pg_locks shows them), sorted. */
async function heldLocks(sql: SqlWithCopy): Promise<string[]> {
  const { rows } = await sql.query<{ key: string }>(
    "SELECT objid::text AS key FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted ORDER BY objid",
  );
  return rows.map((row) => row.key).sort();
}

/**
 * Runs createSession in a transaction, recording each statement, the due-amount locks held just
 * before the statement that inserts the session and those held once it has run.
 */
async function created(params: CreateSessionParams) {
  const sent: string[] = [];
  let heldAtInsert: string[] = [];
  let heldAfterInsert: string[] = [];
  const session = await db.store.transaction(async (sql) => {
    const recording: SqlWithCopy = {
      copyIn: sql.copyIn,
      async query<R extends QueryResultRow>(statement: string | PreparedStatement, values?: unknown[]) {
        const text = statementText(statement);
        const inserts = text.includes('INSERT INTO payment_sessions');
        if (inserts) heldAtInsert = await heldLocks(sql);
        sent.push(text.replace(/\s+/g, ' ').trim());
        const result = await sql.query<R>(statement, values);
        if (inserts) heldAfterInsert = await heldLocks(sql);
        return result;
      },
    };
    return createSession(recording, params);
  });
  return { session, sent, heldAtInsert, heldAfterInsert };
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
  test('sends one statement, which keeps the wallet, takes the due-amount locks and inserts', async () => {
    const merchantId = await newMerchant(db.store);
    const wallet = newEvmWallet();
    await addWallet(db.store, { merchantId, chain: 'polygon', address: wallet, verifiedBy: 'operator' });
    const { session, sent, heldAtInsert, heldAfterInsert } = await created(base(merchantId, wallet));
    expect(session.status).toBe('created');
    expect(session.amountDue).toBe(25_000_000n);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatch(/FROM wallets .*FOR KEY SHARE.*pg_advisory_xact_lock.*pg_advisory_xact_lock.*pick_due_amount.*INSERT INTO payment_sessions/);
    // The statement takes the locks that serialise due-amount picks, held until the transaction ends.
    expect(heldAtInsert).toEqual([]);
    expect(heldAfterInsert).toEqual(await dueLockObjids({ payTo: wallet, amount: 25_000_000n }));
    // Two creations at one price still get two due amounts.
    const second = await created(base(merchantId, wallet));
    expect(second.session.amountDue).toBe(session.amountDue + 1n);
  });

  test('a sandbox creation is one statement too', async () => {
    const merchantId = await newMerchant(db.store);
    const { session, sent } = await created({ ...base(merchantId, newEvmWallet()), livemode: false });
    expect(session.livemode).toBe(false);
    expect(sent).toHaveLength(1);
  });

  test('a new inline wallet is registered first, then locked as before', async () => {
    const merchantId = await newMerchant(db.store);
    const wallet = newEvmWallet();
    const { sent, heldAtInsert } = await created(base(merchantId, wallet));
    // The one statement finds no wallet row: it locks and inserts nothing, and the creation goes
    // the way of a new wallet (register, lock, INSERT).
    const walletInsert = sent.findIndex((text) => text.startsWith('INSERT INTO wallets'));
    expect(walletInsert).toBeGreaterThan(0);
    expect(sent.at(-1)).toMatch(/^WITH held AS MATERIALIZED/);
    const { rows } = await db.store.query('SELECT verified_at FROM wallets WHERE merchant_id = $1 AND address = $2', [merchantId, wallet]);
    expect(rows).toHaveLength(1);
    expect(heldAtInsert).toEqual(expect.arrayContaining(await dueLockObjids({ payTo: wallet, amount: 25_000_000n })));
    const { rows: sessions } = await db.store.query('SELECT count(*)::int AS n FROM payment_sessions WHERE pay_to = $1', [wallet]);
    expect(sessions[0]).toEqual({ n: 1 });
  });
});

describe('the pick under the locks', () => {
  test('sees a session committed while the statement waited on the due-amount locks', async () => {
    const merchantId = await newMerchant(db.store);
    const wallet = newEvmWallet();
    await addWallet(db.store, { merchantId, chain: 'polygon', address: wallet, verifiedBy: 'operator' });
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let firstCreated!: () => void;
    const firstIn = new Promise<void>((resolve) => (firstCreated = resolve));
    // The first creation holds the locks, its session not yet committed.
    const first = db.store.transaction(async (sql) => {
      const session = await createSession(sql, base(merchantId, wallet));
      firstCreated();
      await held;
      return session;
    });
    await firstIn;
    // The second starts now (its statement's snapshot cannot see the first session) and waits on the locks.
    const second = db.store.transaction((sql) => createSession(sql, base(merchantId, wallet)));
    await waitForLockWait();
    release();
    const [a, b] = await Promise.all([first, second]);
    expect(a.amountDue).toBe(25_000_000n);
    expect(b.amountDue).toBe(25_000_001n);
  });
});

/** Until some backend of this database waits on an advisory lock (the shared 30 s wait: a loaded CI machine may take seconds to get there). */
async function waitForLockWait(): Promise<void> {
  await waitFor(async () => {
    const { rows } = await db.store.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' AND NOT l.granted AND a.datname = current_database()",
    );
    return rows[0]!.n > 0;
  }, 'a creation waiting on the due-amount locks');
}

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
