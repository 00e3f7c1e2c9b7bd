import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { KeyPairSigner } from '@solana/kit';
import { useTestDatabase } from '../../helpers/db.ts';
import { startSolanaRpc, type SolanaTestRpc } from '../../helpers/solanaRpc.ts';
import { createIngest } from '../../../src/ingest/index.ts';
import { createSolanaIngester } from '../../../src/ingest/solana/index.ts';
import { loadChains } from '../../../src/internal/chains.ts';
import { loadConfig } from '../../../src/internal/config.ts';
import { createLogger } from '../../../src/internal/logger.ts';
import { createMetricsRegistry } from '../../../src/internal/metrics.ts';
import { createSolanaMerchant, transfersOf, waitFor } from '../../helpers/solanaIngest.ts';

const db = useTestDatabase('solana_wiring');
let rpc: SolanaTestRpc;
let merchant: KeyPairSigner;
let payer: KeyPairSigner;
const logger = createLogger({ level: 'silent' });

beforeAll(async () => {
  rpc = await startSolanaRpc();
  ({ wallet: merchant } = await createSolanaMerchant(db.store, rpc));
  payer = await rpc.wallet();
  await rpc.fund(payer.address, 'USDC', 1_000_000_000n);
});

afterAll(async () => {
  await rpc?.stop();
});

async function paidAndStored(amount: bigint): Promise<string> {
  const paid = await rpc.pay({ from: payer, to: merchant.address, currency: 'USDC', amount });
  await waitFor(async () => (await transfersOf(db.store, paid.signature)).length === 1, `payment ${paid.signature}`);
  return paid.signature;
}

describe('solana ingester wiring', () => {
  test('two processes on one database: one ingests, the other stands by and takes over when the first stops', async () => {
    const make = () =>
      createSolanaIngester({
        store: db.store,
        logger,
        metrics: createMetricsRegistry({ defaultMetrics: false }),
        chain: loadChains().solana,
        rpc: { http: [rpc.url], ws: [] },
        pollIntervalMs: 50,
        standbyPollMs: 50,
      });
    const first = make();
    const second = make();
    try {
      await first.start();
      await waitFor(async () => first.status().state === 'leader', 'the first to lead');
      await second.start();
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(second.status()).toEqual({ state: 'standby' });
      await paidAndStored(1_000_001n);

      await first.stop();
      expect(first.status()).toEqual({ state: 'stopped' });
      await waitFor(async () => second.status().state === 'leader', 'the second to take over');
      await paidAndStored(1_000_002n);
    } finally {
      await first.stop();
      await second.stop();
    }
  });

  test('an ingester whose lock connection dies stops ingesting and stands by; the other takes over', async () => {
    const make = () =>
      createSolanaIngester({
        store: db.store,
        logger,
        metrics: createMetricsRegistry({ defaultMetrics: false }),
        chain: loadChains().solana,
        rpc: { http: [rpc.url], ws: [] },
        pollIntervalMs: 50,
        standbyPollMs: 50,
      });
    const first = make();
    const second = make();
    try {
      await first.start();
      await waitFor(async () => first.status().state === 'leader', 'the first to lead');
      await second.start();
      // Postgres ends the first's lock session (as a network cut or a failover would): its lock is
      // gone. Advisory locks are per database; other test files hold the same key in theirs.
      const { rows } = await db.store.query<{ pid: number }>(
        `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objid = $1::int::oid AND granted
           AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
        [0x736f6c],
      );
      expect(rows).toHaveLength(1);
      await db.store.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
      await waitFor(async () => second.status().state === 'leader', 'the second to take over');
      await waitFor(async () => first.status().state === 'standby', 'the first to stand by');
      await paidAndStored(1_000_005n);
    } finally {
      await first.stop();
      await second.stop();
    }
  });

  test('createIngest runs it when SVC_SOLANA_RPC_URL is set; a dead first URL fails over to the second and is counted', async () => {
    const registry = createMetricsRegistry({ defaultMetrics: false });
    const config = loadConfig({ SVC_SOLANA_RPC_URL: `http://127.0.0.1:1,${rpc.url}`, SVC_SOLANA_WS_URL: rpc.wsUrl });
    const ingest = createIngest({ config, store: db.store, connectionString: db.connectionString, logger, metrics: registry, onChainChange: () => {} });
    try {
      expect(ingest.chains).toEqual(['solana']);
      await waitFor(async () => ingest.status().solana?.state === 'leader', 'solana to lead');
      await paidAndStored(1_000_003n);
      const metrics = await registry.metrics();
      expect(metrics).toMatch(/svc_ingest_rpc_errors_total\{chain="solana",method="getSlot",endpoint="0:127\.0\.0\.1:1",kind="endpoint"\} [1-9]/);
      expect(metrics).toMatch(/svc_ingest_head_block\{chain="solana"\} [1-9]/);
      expect(metrics).toMatch(/svc_ingest_leader\{chain="solana"\} 1/);
      expect(metrics).toMatch(/svc_ingest_solana_lag_slots \d+/);
      expect(metrics).toMatch(/svc_ingest_finalized_block\{chain="solana"\} \d+/);
    } finally {
      await ingest.stop();
    }
  });
});

describe('solana ingester over WebSocket', () => {
  test('an account notification wakes it: a payment is stored long before the next poll would run', async () => {
    rpc.calls.clear();
    const ingester = createSolanaIngester({
      store: db.store,
      logger,
      metrics: createMetricsRegistry({ defaultMetrics: false }),
      chain: loadChains().solana,
      rpc: { http: [rpc.url], ws: [rpc.wsUrl] },
      // Polls and sweeps a minute apart: only a notification can make this test pass in time.
      pollIntervalMs: 60_000,
      sweepIntervalMs: 60_000,
      standbyPollMs: 50,
    });
    await ingester.start();
    try {
      await waitFor(async () => (rpc.calls.get('ws:accountSubscribe') ?? 0) >= 2 && (rpc.calls.get('ws:slotSubscribe') ?? 0) >= 1, 'the subscriptions');
      // Let the first (full) pass finish and the loop go to sleep.
      await new Promise((resolve) => setTimeout(resolve, 300));
      const started = Date.now();
      await paidAndStored(1_000_004n);
      expect(Date.now() - started).toBeLessThan(10_000);
      // stop() does not wait out the minute-long poll.
      const stopping = Date.now();
      await ingester.stop();
      expect(Date.now() - stopping).toBeLessThan(5_000);
    } finally {
      await ingester.stop();
    }
  });
});
