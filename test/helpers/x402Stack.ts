import type { Address, Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { expect } from 'vitest';
import { startAnvil, type Anvil } from './anvil.ts';
import { box, GENEROUS_LIMITS, httpApi, newMerchant } from './api.ts';
import type { useTestDatabase } from './db.ts';
import { newEvmWallet } from './engine.ts';
import { startLivePipeline, startVerifyingReceiver } from './livePipeline.ts';
import { addWallet } from '../../src/accounts/index.ts';
import { createHttp } from '../../src/http.ts';
import type { ChainName } from '../../src/internal/config.ts';
import { loadConfig } from '../../src/internal/config.ts';
import { createX402 } from '../../src/x402/index.ts';

/**
 * The whole x402 stack of the anvil end-to-end files, as the daemon runs it: the live pipeline
 * (ingest, engine) on `anvil` as `chain`, x402 with a gas-only relayer key, the HTTP server, a
 * merchant with a fresh wallet on that chain, and its webhook receiver verifying every delivery.
 * The caller prepares the chain (tokens, Permit2, balances) before and stops anvil after `close`.
 */
export async function startX402Stack(params: {
  db: ReturnType<typeof useTestDatabase>;
  anvil: Anvil;
  chain: ChainName;
  relayerKey: Hex;
  merchantName: string;
  /** Checks the relayer and Permit2 on the chain before serving (x402.probe()). */
  probe?: boolean;
}) {
  const upper = params.chain.toUpperCase();
  const config = loadConfig({
    [`SVC_${upper}_RPC_URL`]: params.anvil.rpcUrl,
    [`SVC_${upper}_RELAYER_KEY`]: params.relayerKey,
    SVC_WEBHOOK_ALLOW_PRIVATE: 'true',
    SVC_PUBLIC_URL: 'http://127.0.0.1:1',
    LOG_LEVEL: 'silent',
  });
  const { store, connectionString } = params.db;
  const pipeline = startLivePipeline({ store, connectionString, config });
  const { logger, metrics } = pipeline;
  const x402 = createX402({ store, logger, metrics, config, pollMs: 100 });
  if (params.probe) await x402.probe();
  const app = createHttp({ store, logger, metrics, config, box, x402, rateLimits: GENEROUS_LIMITS });
  const baseUrl = await app.listen({ port: 0, host: '127.0.0.1' });
  config.publicUrl = baseUrl;
  const merchant = await newMerchant(store, params.merchantName);
  const wallet = newEvmWallet() as Address;
  await addWallet(store, { merchantId: merchant.id, chain: params.chain, address: wallet, verifiedBy: 'operator' });
  const receiver = await startVerifyingReceiver();
  const api = httpApi(
    () => baseUrl,
    () => merchant.live,
  );
  const registered = await api('POST', '/api/v1/webhooks', { url: receiver.url });
  expect(registered.status).toBe(201);
  receiver.useSecret(registered.body.secret);
  await pipeline.startDelivery({ chain: params.chain, webhookAllowPrivate: true });
  return {
    pipeline,
    app,
    baseUrl,
    merchant,
    wallet,
    receiver,
    api,
    async close() {
      await pipeline.close();
      await app.close();
      await receiver.close();
    },
  };
}

/**
 * {@link startX402Stack} on its own anvil, as the anvil x402 files start it: anvil as `chain`
 * with the chain's real token contracts, `prepare` (test tokens, Permit2, the payer's balances),
 * the relayer holding gas only (1 ETH), then the stack. `close` stops anvil too.
 */
export async function startAnvilX402Stack(params: Omit<Parameters<typeof startX402Stack>[0], 'anvil'> & { prepare: (anvil: Anvil) => Promise<void> }) {
  const { prepare, ...rest } = params;
  const anvil = await startAnvil({ chain: params.chain as Exclude<ChainName, 'solana'> });
  try {
    await anvil.installChainTokens();
    await prepare(anvil);
    await anvil.client.setBalance({ address: privateKeyToAccount(params.relayerKey).address, value: 10n ** 18n });
    const stack = await startX402Stack({ ...rest, anvil });
    return {
      ...stack,
      anvil,
      async close() {
        await stack.close();
        await anvil.stop();
      },
    };
  } catch (error) {
    await anvil.stop();
    throw error;
  }
}
