import { randomBytes } from 'node:crypto';
import type { KeyPairSigner } from '@solana/kit';
import { createMerchant } from '../../src/accounts/merchants.ts';
import { addWallet } from '../../src/accounts/wallets.ts';
import { createSecretBox } from '../../src/internal/crypto.ts';
import { loadChains } from '../../src/internal/chains.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { createMetricsRegistry, type Registry } from '../../src/internal/metrics.ts';
import type { Store } from '../../src/store/index.ts';
import { createSolanaIngester, type SolanaChainChange, type SolanaIngester } from '../../src/ingest/solana/index.ts';
import { createEngine, type Engine } from '../../src/engine/index.ts';
import { startSolanaRpc, type SolanaTestRpc } from './solanaRpc.ts';
import { createSession } from '../../src/payments/sessions.ts';

/** A merchant with one verified solana wallet, its default (a real keypair, so tests can also spend from it). */
export async function createSolanaMerchant(store: Store, rpc: SolanaTestRpc): Promise<{ merchantId: string; wallet: KeyPairSigner }> {
  const { merchant } = await createMerchant(store, createSecretBox(randomBytes(32)), { name: 'Solana shop' });
  const wallet = await rpc.wallet();
  await addWallet(store, { merchantId: merchant.id, chain: 'solana', address: wallet.address, verifiedBy: 'operator', makeDefault: true });
  return { merchantId: merchant.id, wallet };
}

/** The real ingester against the test RPC, with fast polling; `changes` records its callbacks. */
export function startIngester(params: {
  store: Store;
  rpc: SolanaTestRpc;
  websocket?: boolean;
  registry?: Registry;
  onChainChange?: (change: SolanaChainChange) => void;
}): {
  ingester: SolanaIngester;
  changes: SolanaChainChange[];
  registry: Registry;
} {
  const changes: SolanaChainChange[] = [];
  const registry = params.registry ?? createMetricsRegistry({ defaultMetrics: false });
  const ingester = createSolanaIngester({
    store: params.store,
    logger: createLogger({ level: (process.env.LOG_LEVEL as 'silent') ?? 'silent' }),
    metrics: registry,
    chain: loadChains().solana,
    rpc: { http: [params.rpc.url], ws: params.websocket ? [params.rpc.wsUrl] : [] },
    onChainChange: (change) => {
      changes.push(change);
      params.onChainChange?.(change);
    },
    pollIntervalMs: 50,
    sweepIntervalMs: 5_000,
    discoverIntervalMs: 200,
    standbyPollMs: 100,
  });
  return { ingester, changes, registry };
}

export { waitFor } from './waitFor.ts';

export interface TransferRow {
  tx_hash: string;
  log_index: number;
  block_number: bigint;
  token_address: string;
  from_address: string | null;
  to_address: string;
  amount: string;
  reference_keys: string[];
  status: string;
  session_id: string | null;
  match_method: string | null;
}

export async function transfersOf(store: Store, signature: string): Promise<TransferRow[]> {
  const { rows } = await store.query<TransferRow>(
    `SELECT tx_hash, log_index, block_number, token_address, from_address, to_address, amount::text, reference_keys, status, session_id, match_method
     FROM transfers WHERE chain = 'solana' AND livemode AND tx_hash = $1 ORDER BY log_index`,
    [signature],
  );
  return rows;
}

export async function chainHead(store: Store): Promise<{ head_block: bigint | null; finalized_block: bigint | null } | undefined> {
  const { rows } = await store.query<{ head_block: bigint | null; finalized_block: bigint | null }>(
    "SELECT head_block, finalized_block FROM chain_heads WHERE livemode AND chain = 'solana'",
  );
  return rows[0];
}

/** The real ingester feeding the real engine, started: what a session on solana goes through. */
export async function startIngesterWithEngine(params: {
  store: Store;
  rpc: SolanaTestRpc;
}): Promise<{ ingester: SolanaIngester; engine: Engine; stop(): Promise<void> }> {
  const registry = createMetricsRegistry({ defaultMetrics: false });
  const engine = createEngine({ store: params.store, logger: createLogger({ level: 'silent' }), metrics: registry, config: { monitorWindowSeconds: 3600 } });
  const { ingester } = startIngester({ store: params.store, rpc: params.rpc, registry, onChainChange: (change) => engine.onChainChange(change) });
  await ingester.start();
  return {
    ingester,
    engine,
    async stop() {
      await ingester.stop();
      await engine.idle();
    },
  };
}

/**
 * A Solana merchant's money path on the litesvm test RPC: the RPC, a merchant with a verified
 * wallet, a payer holding 10,000 USDC (finalized), and the real ingester feeding the real engine.
 * `newSession` opens a live USDC session of the merchant; `close` stops it all.
 */
export async function startSolanaStack(store: Store) {
  const rpc = await startSolanaRpc();
  const { merchantId, wallet: merchant } = await createSolanaMerchant(store, rpc);
  const payer = await rpc.wallet();
  await rpc.fund(payer.address, 'USDC', 10_000_000_000n);
  rpc.ledger.finalize();
  const { ingester, engine, stop } = await startIngesterWithEngine({ store, rpc });
  return {
    rpc,
    merchantId,
    merchant,
    payer,
    ingester,
    engine,
    newSession: (amount: string) =>
      store.transaction((sql) => createSession(sql, { merchantId, livemode: true, amount, currency: 'USDC', chain: 'solana', monitorWindowSeconds: 3600 })),
    async close(): Promise<void> {
      await stop();
      await rpc.stop();
    },
  };
}
