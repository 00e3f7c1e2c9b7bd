import { afterAll, afterEach, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { NonRetryableError, RetryableError } from '../../src/internal/errors.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { createIngestMetrics } from '../../src/ingest/metrics.ts';
import { createLeaderLocks, LeadershipLostError, type LeaderLocks } from '../../src/ingest/leader.ts';
import { superviseChain, type ChainSupervisor, type LeadContext } from '../../src/ingest/supervisor.ts';
import type { LockPair } from '../../src/store/lockKeys.ts';
import { captureLogger, metricValue, waitFor } from '../helpers/evmIngest.ts';

const db = useTestDatabase('ingest_supervisor');
const KEY: LockPair = [0x73766369, 999_001];
const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});
afterAll(async () => {
  for (const step of cleanup.reverse()) await step();
});

/** A supervisor for a test chain on its own lock connection (as another process would have); `lead` is the test's ingester. */
function supervise(lead: (context: LeadContext) => Promise<void>, key: LockPair = KEY) {
  const { logger, logs } = captureLogger();
  const registry = createMetricsRegistry({ defaultMetrics: false });
  const locks: LeaderLocks = createLeaderLocks({ connection: { connectionString: db.connectionString }, logger });
  const controller = new AbortController();
  const supervisor: ChainSupervisor = superviseChain({
    chain: 'testchain',
    lockKey: key,
    locks,
    logger,
    metrics: createIngestMetrics(registry),
    signal: controller.signal,
    standbyPollMs: 50,
    lead,
  });
  const stop = async () => {
    controller.abort();
    await supervisor.done;
    await locks.close();
  };
  cleanup.push(stop);
  return { supervisor, logs, registry, stop };
}

/** Runs until its signal aborts, as an ingester does. */
const ingestUntilAborted = ({ signal }: LeadContext) => new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));

test('a lost leader lock (LeadershipLostError from the fence) stands by again: no failure counted, no restart error, never retrying', async () => {
  // Each run is a lease this process took as leader; the fence then says it is lost. (Counting
  // runs, not sampling the state: the leader state of a run that throws at once lasts too short
  // for a timer to see it reliably.)
  let leases = 0;
  const first = supervise(async () => {
    leases++;
    throw new LeadershipLostError('lost the testchain ingest lock; another process may be the leader now');
  });
  await waitFor(() => first.logs.lines.filter((line) => line.msg === 'Lost the leader lock; standing by').length >= 2, 10_000, 'two lost leases');
  expect(leases).toBeGreaterThanOrEqual(2);
  // Between leases it stands by; sampled once, a loaded machine (CI) caught it inside the next
  // lease, so wait for a standby moment, with the leader metric at 0 in it.
  await waitFor(
    async () => first.supervisor.status().state === 'standby' && (await metricValue(first.registry, 'svc_ingest_leader', { chain: 'testchain' })) === 0,
    10_000,
    'standby between leases',
  );
  expect(first.logs.find((line) => line.msg === 'Ingester stopped on an error; restarting')).toBeUndefined();
  expect(first.logs.find((line) => String(line.msg).includes('refuses to run'))).toBeUndefined();
});

test('a NonRetryableError refuses the chain: state refused with the reason, and the lock released for a correctly configured process', async () => {
  const first = supervise(async () => {
    throw new NonRetryableError('testchain: RPC endpoint 0:host reports chain id 1, but chains/testchain.json says 2');
  });
  await waitFor(() => first.supervisor.status().state === 'refused', 10_000, 'the refusal');
  expect(first.supervisor.status()).toEqual({ state: 'refused', error: 'testchain: RPC endpoint 0:host reports chain id 1, but chains/testchain.json says 2' });
  const second = supervise(ingestUntilAborted);
  await waitFor(() => second.supervisor.status().state === 'leader', 10_000, 'the second process to lead');
});

test('any other error restarts the ingester with backoff, state retrying meanwhile', async () => {
  const started: number[] = [];
  const first = supervise(async () => {
    started.push(Date.now());
    throw new RetryableError('testchain: eth_blockNumber failed on every RPC URL');
  });
  await waitFor(() => started.length >= 2, 10_000, 'a restart');
  expect(started[1]! - started[0]!).toBeGreaterThanOrEqual(900);
  expect(first.supervisor.status()).toMatchObject({ state: expect.stringMatching(/retrying|leader/) });
  expect(first.logs.find((line) => line.msg === 'Ingester stopped on an error; restarting')).toMatchObject({ consecutive_failures: 1 });
});

test('one process leads, another stands by and takes over when the leader stops; a killed lock connection ends the lease', async () => {
  const key: LockPair = [0x73766369, 999_002];
  const first = supervise(ingestUntilAborted, key);
  await waitFor(() => first.supervisor.status().state === 'leader', 10_000, 'the first to lead');
  const second = supervise(ingestUntilAborted, key);
  await waitFor(() => second.logs.find((line) => line.msg === 'Another process leads this chain; standing by'), 10_000, 'the standby');
  expect(second.supervisor.status()).toEqual({ state: 'standby' });
  expect(await metricValue(first.registry, 'svc_ingest_leader', { chain: 'testchain' })).toBe(1);

  await first.stop();
  expect(first.supervisor.status()).toEqual({ state: 'stopped' });
  await waitFor(() => second.supervisor.status().state === 'leader', 10_000, 'the second to take over');

  // Postgres ends the leader's lock session (a network cut, a failover): its lease ends, it stands by, and leads again.
  await db.store.query(
    `SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND classid = $1::bigint::oid AND objid = $2::bigint::oid AND objsubid = 2
       AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
    [key[0], key[1]],
  );
  await waitFor(() => second.logs.find((line) => line.msg === 'Lost the leader lock; standing by'), 10_000, 'the lost lease');
  await waitFor(() => second.logs.lines.filter((line) => line.msg === 'Leading this chain: ingester starting').length === 2, 10_000, 'leadership again');
});
