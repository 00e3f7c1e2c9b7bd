import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { box, merchant } from '../helpers/delivery.ts';
import { waitFor } from '../helpers/waitFor.ts';
import { createEndpoint } from '../../src/delivery/index.ts';
import { claimDueDeliveries } from '../../src/delivery/claim.ts';
import { dispatchEvents } from '../../src/delivery/dispatch.ts';
import { LEASE_MS } from '../../src/delivery/types.ts';
import { appendEvent } from '../../src/payments/outbox.ts';

/*
 * The claim's `due` CTE re-checks every condition of a claimable row on the row it locks. Under
 * READ COMMITTED, a row that another transaction updated and committed after the claim took its
 * snapshot (but before it locked the row) is re-evaluated on its newest version: only that
 * recheck keeps a delivery just rescheduled into the future, or just leased by another worker,
 * from being claimed on the strength of the stale version `candidates` read.
 *
 * Why not "A holds the row lock, B waits on it": the claim locks with FOR UPDATE SKIP LOCKED, so
 * it never waits on a row lock; it skips a row locked by an open transaction whatever the
 * recheck says (such a test passes with the recheck removed). The window the recheck guards is
 * between the claim's snapshot and its row lock, while the other transaction has already
 * committed. To hold the claim inside that window deterministically, its connection runs as a
 * role that a row-level security policy on webhook_deliveries gates on a shared advisory lock
 * (evaluated on the rows it scans, after the snapshot is taken, before any row is locked). The
 * test holds that advisory lock exclusively, sees the claim wait on it (pg_locks), commits the
 * other worker's update, and releases it. The claim's SQL is unchanged; the gate only pauses it.
 */

const db = useTestDatabase('delivery_claim_recheck');
const GATE_KEY = 7_340_056;
let role: string;

beforeAll(async () => {
  role = `${db.name}_claimer`.slice(0, 63);
  await db.store.query(`CREATE ROLE "${role}" NOLOGIN`);
  await db.store.query(
    `GRANT SELECT, UPDATE ON webhook_deliveries TO "${role}";
     GRANT SELECT ON events, webhook_endpoints, merchant_webhook_secrets TO "${role}"`,
  );
  await db.store.query(
    `CREATE FUNCTION claim_gate() RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
       BEGIN PERFORM pg_advisory_xact_lock_shared(${GATE_KEY}); RETURN true; END $$`,
  );
  await db.store.query(
    `ALTER TABLE webhook_deliveries ENABLE ROW LEVEL SECURITY;
     CREATE POLICY claim_gate ON webhook_deliveries TO "${role}" USING (claim_gate()) WITH CHECK (true)`,
  );
});

afterAll(async () => {
  // The role is cluster-wide: drop what it holds in this database, then the role.
  if (role) await db.store.query(`DROP OWNED BY "${role}"; DROP ROLE "${role}"`);
});

async function connect(): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: db.connectionString });
  await client.connect();
  return client;
}

/** Two pending deliveries due at `now` on one endpoint: `target` (the older) and `other`. */
async function twoDue() {
  await db.store.query('TRUNCATE webhook_attempts, webhook_deliveries, events CASCADE');
  const m = await merchant(db.store, 'Recheck Ltd');
  await createEndpoint(db.store, box, { merchantId: m.merchant.id, livemode: false, url: 'https://recheck.example/hook' });
  await db.store.transaction(async (sql) => {
    for (let i = 0; i < 2; i++) await appendEvent(sql, { merchantId: m.merchant.id, livemode: false, type: 'payment.confirmed', data: { i } });
  });
  const now = new Date();
  await db.store.transaction((sql) => dispatchEvents(sql, { now, limit: 16 }));
  const { rows } = await db.store.query<{ id: string }>('SELECT id FROM webhook_deliveries ORDER BY next_attempt_at, id');
  expect(rows).toHaveLength(2);
  // The target strictly first in due order.
  await db.store.query('UPDATE webhook_deliveries SET next_attempt_at = $2 WHERE id = $1', [rows[0]?.id, new Date(now.getTime() - 1_000)]);
  return { now, target: rows[0]?.id as string, other: rows[1]?.id as string };
}

/**
 * Runs a claim at `now` on a gated connection, and while it waits inside its statement (after its
 * snapshot), commits `update` on another connection; returns the claimed ids.
 */
async function claimAcross(now: Date, update: (other: pg.Client) => Promise<unknown>): Promise<string[]> {
  const worker = await connect();
  const claimer = await connect();
  try {
    await claimer.query(`SET ROLE "${role}"`);
    const claimerPid = (await claimer.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid;
    await worker.query('SELECT pg_advisory_lock($1)', [GATE_KEY]);
    const claim = claimDueDeliveries(claimer, { now, limit: 10 });
    claim.catch(() => {});
    // The claim is inside its statement, its snapshot taken, waiting on the gate.
    await waitFor(
      async () =>
        (
          await db.store.query(
            `SELECT 1 FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
              WHERE l.pid = $1 AND l.locktype = 'advisory' AND NOT l.granted AND a.wait_event_type = 'Lock'`,
            [claimerPid],
          )
        ).rowCount === 1,
      'the claim waiting on the gate',
    );
    await worker.query('BEGIN');
    await update(worker);
    await worker.query('COMMIT');
    await worker.query('SELECT pg_advisory_unlock($1)', [GATE_KEY]);
    return (await claim).map((d) => d.id);
  } finally {
    await worker.end();
    await claimer.end();
  }
}

describe('claimDueDeliveries re-checks the row it locks', () => {
  test('a delivery rescheduled into the future after the claim took its snapshot is not claimed', async () => {
    const { now, target, other } = await twoDue();
    const later = new Date(now.getTime() + 3_600_000);
    const claimed = await claimAcross(now, (worker) =>
      worker.query('UPDATE webhook_deliveries SET next_attempt_at = $2, attempt_count = attempt_count + 1 WHERE id = $1', [target, later]),
    );
    // The gate let the claim through: the untouched delivery is claimed, the rescheduled one not.
    expect(claimed).toEqual([other]);
    const { rows } = await db.store.query<{ next_attempt_at: Date; locked_until: Date | null }>(
      'SELECT next_attempt_at, locked_until FROM webhook_deliveries WHERE id = $1',
      [target],
    );
    expect(rows[0]?.next_attempt_at.getTime()).toBe(later.getTime());
    expect(rows[0]?.locked_until).toBeNull();
  });

  test('a delivery another worker leased after the claim took its snapshot is not claimed again', async () => {
    const { now, target, other } = await twoDue();
    const lease = new Date(now.getTime() + LEASE_MS);
    const claimed = await claimAcross(now, (worker) => worker.query('UPDATE webhook_deliveries SET locked_until = $2 WHERE id = $1', [target, lease]));
    expect(claimed).toEqual([other]);
    const { rows } = await db.store.query<{ locked_until: Date | null }>('SELECT locked_until FROM webhook_deliveries WHERE id = $1', [target]);
    expect(rows[0]?.locked_until?.getTime()).toBe(lease.getTime());
  });
});
