import type { Address } from 'viem';
import { addWallet } from '../../src/accounts/index.ts';
import { loadConfig, type ChainName, type Config } from '../../src/internal/config.ts';
import type { Store } from '../../src/store/index.ts';
import { startAnvil, type Anvil } from './anvil.ts';
import { buildApi, createClient, newMerchant } from './api.ts';
import { newEvmWallet } from './engine.ts';
import { startLivePipeline } from './livePipeline.ts';
import { waitFor } from './waitFor.ts';

/** Env names of each EVM chain's RPC URL, as the daemon reads them. */
const RPC_URL_ENV = {
  polygon: 'SVC_POLYGON_RPC_URL',
  base: 'SVC_BASE_RPC_URL',
  bsc: 'SVC_BSC_RPC_URL',
  arbitrum: 'SVC_ARBITRUM_RPC_URL',
  optimism: 'SVC_OPTIMISM_RPC_URL',
} as const;

type EvmChain = Exclude<ChainName, 'solana'>;

/**
 * The live money path on one anvil chain, as the end-to-end tests use it: anvil with the chain's
 * real token contracts, the engine and the real EVM ingester (the daemon's wiring, see
 * startLivePipeline), the API over the same database, and a merchant with live and test keys.
 * Resolves once the ingester has stored its first checkpoint, so a transfer sent afterwards is
 * seen. `close` stops everything in the daemon's order.
 */
export async function startAnvilStack(params: { store: Store; connectionString: string; chain?: EvmChain; before?: (anvil: Anvil) => Promise<void> }) {
  const chain = params.chain ?? 'polygon';
  const anvil = await startAnvil({ chain });
  await anvil.installChainTokens();
  await params.before?.(anvil);
  const env = { [RPC_URL_ENV[chain]]: anvil.rpcUrl };
  const config: Config = loadConfig(env);
  const pipeline = startLivePipeline({ store: params.store, connectionString: params.connectionString, config });
  const app = buildApi(params.store, { env });
  await app.ready();
  const merchant = await newMerchant(params.store);
  await waitFor(
    async () => (await params.store.query('SELECT 1 FROM chain_heads WHERE livemode AND chain = $1 AND processed_block IS NOT NULL', [chain])).rowCount === 1,
    'first checkpoint',
  );
  return {
    chain,
    anvil,
    config,
    pipeline,
    app,
    call: createClient(app),
    merchant,
    /** A new receiving wallet of the merchant, verified by the operator, so the ingester watches it. */
    async wallet(): Promise<Address> {
      const address = newEvmWallet(chain) as Address;
      await addWallet(params.store, { merchantId: merchant.id, chain, address, verifiedBy: 'operator' });
      return address;
    },
    async close(): Promise<void> {
      await pipeline.close();
      await app.close();
      await anvil.stop();
    },
  };
}

/** What {@link startAnvilStack} resolves to. */
export type AnvilStack = Awaited<ReturnType<typeof startAnvilStack>>;
