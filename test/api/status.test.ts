import { afterAll, beforeAll, expect, test } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { useTestDatabase } from '../helpers/db.ts';
import { buildApi, createClient, newMerchant } from '../helpers/api.ts';
import { createOpenApiChecker } from '../helpers/openapiCheck.ts';
import { CHAIN_NAMES } from '../../src/internal/config.ts';
import { SANDBOX_GENESIS_MS } from '../../src/ingest/simulatedChain.ts';

const db = useTestDatabase('status');
const SANDBOX_BLOCK_MS = 250;
let noRpc: FastifyInstance;
let twoLive: FastifyInstance;
let merchant: Awaited<ReturnType<typeof newMerchant>>;

/** No chain has an RPC URL, whatever the harness defaults to. */
const NO_RPC = Object.fromEntries(
  CHAIN_NAMES.flatMap((chain) => [`SVC_${chain.toUpperCase()}_RPC_URL`, `SVC_${chain.toUpperCase()}_WS_URL`].map((name) => [name, ''])),
);

beforeAll(async () => {
  noRpc = buildApi(db.store, { env: NO_RPC });
  twoLive = buildApi(db.store, { env: { ...NO_RPC, SVC_POLYGON_RPC_URL: 'http://127.0.0.1:1', SVC_BASE_WS_URL: 'ws://127.0.0.1:1' } });
  await Promise.all([noRpc.ready(), twoLive.ready()]);
  merchant = await newMerchant(db.store);
});
afterAll(async () => {
  await noRpc?.close();
  await twoLive?.close();
});

const chainOf = (body: { chains: { chain: string; headBlock: string }[] }, name: string) => body.chains.find((chain) => chain.chain === name);

test('a test key sees the simulated chains healthy even when no sandbox payment moved them for an hour', async () => {
  await db.store.query(
    `INSERT INTO chain_heads (livemode, chain, head_block, processed_block, head_seen_at) VALUES (false, 'polygon', 1234, 1230, now()), (false, 'base', 99, 99, now() - interval '1 hour')`,
  );
  const call = createClient(noRpc, await createOpenApiChecker(noRpc));
  const before = BigInt(Math.floor((Date.now() - SANDBOX_GENESIS_MS) / SANDBOX_BLOCK_MS));
  const { status, body } = await call('GET', '/api/v1/status', { key: merchant.test });
  const after = BigInt(Math.floor((Date.now() - SANDBOX_GENESIS_MS) / SANDBOX_BLOCK_MS));
  expect(status).toBe(200);
  expect(body).toMatchObject({ status: 'healthy', reasons: [], livemode: false });
  expect(
    body.chains.map((chain: { chain: string; mode: string; status: string; lagSeconds: number }) => [chain.chain, chain.mode, chain.status, chain.lagSeconds]),
  ).toEqual(CHAIN_NAMES.map((name) => [name, 'sandbox', 'healthy', 0]));
  // The head is the simulated height now; processedBlock is where the simulator last advanced to.
  const head = BigInt(chainOf(body, 'base')!.headBlock);
  expect(head >= before && head <= after).toBe(true);
  expect(chainOf(body, 'base')).toMatchObject({ processedBlock: '99' });
  expect(chainOf(body, 'bsc')).toMatchObject({ processedBlock: null });
});

test('a live key on a gateway that watches no chain is degraded, with the reason, not ok', async () => {
  const call = createClient(noRpc, await createOpenApiChecker(noRpc));
  const { body } = await call('GET', '/v1/status', { key: merchant.live });
  expect(body.status).toBe('degraded');
  expect(body.reasons).toEqual(['no chain is watched in live mode (no SVC_<CHAIN>_RPC_URL is set): live payments cannot be detected']);
  expect(body.chains.every((chain: { mode: string; status: string }) => chain.mode === 'sandbox-only' && chain.status === 'sandbox-only')).toBe(true);
});

test('a live key: watched chains decide the status (unknown and lagging degrade it); chains without RPC URL are sandbox-only and do not', async () => {
  const call = createClient(twoLive, await createOpenApiChecker(twoLive));
  await db.store.query(`INSERT INTO chain_heads (livemode, chain, head_block, processed_block, head_seen_at) VALUES (true, 'polygon', 500, 498, now())`);
  const waiting = await call('GET', '/api/v1/status', { key: merchant.live });
  expect(waiting.body).toMatchObject({ status: 'degraded', reasons: ['base: the listener has not seen a head yet'], livemode: true });
  expect(chainOf(waiting.body, 'polygon')).toMatchObject({ mode: 'live', status: 'healthy', headBlock: '500', processedBlock: '498', lagSeconds: 0 });
  expect(chainOf(waiting.body, 'base')).toMatchObject({ mode: 'live', status: 'unknown', headBlock: null });
  expect(chainOf(waiting.body, 'solana')).toMatchObject({ mode: 'sandbox-only', status: 'sandbox-only' });

  await db.store.query(`INSERT INTO chain_heads (livemode, chain, head_block, processed_block, head_seen_at) VALUES (true, 'base', 70, 70, now())`);
  expect((await call('GET', '/api/v1/status', { key: merchant.live })).body).toMatchObject({ status: 'healthy', reasons: [] });

  await db.store.query(`UPDATE chain_heads SET head_seen_at = now() - interval '2 minutes' WHERE livemode AND chain = 'base'`);
  const lagging = await call('GET', '/api/v1/status', { key: merchant.live });
  expect(lagging.body).toMatchObject({ status: 'degraded', reasons: ['base: the head has not moved for 120 s (lagging after 60 s)'] });
  expect(chainOf(lagging.body, 'base')).toMatchObject({ status: 'lagging', lagSeconds: 120 });
});
