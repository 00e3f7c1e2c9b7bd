import type { Address, KeyPairSigner } from '@solana/kit';
import { box, GENEROUS_LIMITS, newMerchant } from './api.ts';
import type { useTestDatabase } from './db.ts';
import { startSolanaRpc, type SolanaTestRpc } from './solanaRpc.ts';
import { newSolanaKeypair } from './svmPayments.ts';
import { addWallet } from '../../src/accounts/index.ts';
import { createHttp } from '../../src/http.ts';
import { loadConfig } from '../../src/internal/config.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { createX402 } from '../../src/x402/index.ts';
import { createSvmFeePayer } from '../../src/x402/svm/feePayer.ts';
import { createSolanaRpcPool } from '../../src/ingest/solana/rpc.ts';
import { createIngestMetrics } from '../../src/ingest/metrics.ts';
import { sha256Hex } from '../../src/internal/crypto.ts';

/**
 * The x402 stack of the Solana x402 files, as the daemon runs it (like x402Stack.ts's
 * `startX402Stack` for anvil): litesvm behind the test JSON-RPC server (the real SPL token
 * program, the mainnet mints), a fee payer holding 1 SOL and nothing else
 * (SVC_SOLANA_RELAYER_KEY), a merchant whose default solana wallet has a USDC account, a payer
 * with 100 USDC, and x402 behind the HTTP server. `prepare` funds more accounts before the
 * ledger is finalized; the caller starts the ingester or delivery it needs with `logger` and
 * `metrics`, and calls `close` after stopping them.
 */
export async function startSvmX402Stack(params: {
  db: ReturnType<typeof useTestDatabase>;
  merchantName: string;
  /** Funds more accounts (the stack's own are made by then) before the ledger is finalized. */
  prepare?: (made: { rpc: SolanaTestRpc; wallet: KeyPairSigner; payer: KeyPairSigner; feePayer: Address }) => Promise<void>;
}) {
  const { store } = params.db;
  const feePayerKey = newSolanaKeypair();
  const rpc = await startSolanaRpc();
  rpc.ledger.svm.airdrop(feePayerKey.address, 1_000_000_000n as never);
  const merchant = await newMerchant(store, params.merchantName);
  const wallet = await rpc.wallet();
  await addWallet(store, { merchantId: merchant.id, chain: 'solana', address: wallet.address, verifiedBy: 'operator', makeDefault: true });
  // The merchant's USDC account exists (the client pays into it and does not create it).
  await rpc.fund(wallet.address, 'USDC', 0n);
  const payer = await rpc.wallet();
  await rpc.fund(payer.address, 'USDC', 100_000_000n);
  await params.prepare?.({ rpc, wallet, payer, feePayer: feePayerKey.address });
  rpc.ledger.finalize();

  const config = loadConfig({
    SVC_SOLANA_RPC_URL: rpc.url,
    SVC_SOLANA_RELAYER_KEY: feePayerKey.base58,
    SVC_WEBHOOK_ALLOW_PRIVATE: 'true',
    SVC_PUBLIC_URL: 'http://127.0.0.1:1',
    LOG_LEVEL: 'silent',
  });
  const logger = createLogger({ level: 'silent' });
  const metrics = createMetricsRegistry({ defaultMetrics: false });
  // The fee payer x402 would build from the configuration, the same object, with each message it
  // signs recorded (by hash): what it signs must have passed inspect.ts.
  const signedMessages: string[] = [];
  const realFeePayer = createSvmFeePayer({
    key: config.solanaFeePayerKey!,
    rpc: createSolanaRpcPool({ urls: [rpc.url], logger, metrics: createIngestMetrics(createMetricsRegistry({ defaultMetrics: false })) }),
  });
  const svmFeePayer = {
    ...realFeePayer,
    sign(transaction: Parameters<typeof realFeePayer.sign>[0]) {
      signedMessages.push(sha256Hex(Buffer.from(transaction.messageBytes)));
      return realFeePayer.sign(transaction);
    },
  };
  const x402 = createX402({ store, logger, metrics, config, pollMs: 50, svmFeePayer });
  const app = createHttp({ store, logger, metrics, config, box, x402, rateLimits: GENEROUS_LIMITS });
  const baseUrl = await app.listen({ port: 0, host: '127.0.0.1' });
  config.publicUrl = baseUrl;
  return {
    rpc,
    feePayerKey,
    merchant,
    wallet,
    payer,
    logger,
    metrics,
    x402,
    app,
    baseUrl,
    /** The hashes of the messages the fee payer has signed, in order. */
    signedMessages,
    /** How many x402 settlement rows there are. */
    settlements: async () => Number((await store.query('SELECT count(*)::int AS n FROM x402_settlements')).rows[0]!.n),
    /** The USDC an owner's token account holds (0 when it has none). */
    usdc: async (owner: Address) => rpc.ledger.tokenBalance(await rpc.ata(owner, 'USDC')) ?? 0n,
    async close() {
      await app.close();
      await rpc.stop();
    },
  };
}
