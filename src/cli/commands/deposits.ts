import { formatUnits, type Hex } from 'viem';
import { CHAIN_NAMES, relayerKeyVariableName, type ChainName, type Config } from '../../internal/config.ts';
import { loadChains, type ChainConfig } from '../../internal/chains.ts';
import { createMetricsRegistry } from '../../internal/metrics.ts';
import type { Logger } from '../../internal/logger.ts';
import { createIngestMetrics } from '../../ingest/metrics.ts';
import { createRpc } from '../../ingest/evm/rpc.ts';
import { createDepositSender, type DepositSender } from '../../deposits/sender.ts';
import { deployFactory } from '../../deposits/deployFactory.ts';
import { resolveTokens, sessionDeposits, withBalances } from '../../deposits/plan.ts';
import { sweepDeposits } from '../../deposits/sweep.ts';
import { NATIVE_TOKEN } from '../../deposits/sweeps.ts';
import { emit, jsonOption, requireString, UsageError, withStore, type Command } from '../command.ts';

const EVM_CHAINS: readonly ChainName[] = CHAIN_NAMES.filter((chain) => chain !== 'solana');

function evmChain(values: Record<string, unknown>): ChainName {
  const chain = requireString(values, 'chain') as ChainName;
  if (!EVM_CHAINS.includes(chain)) throw new UsageError(`--chain must be one of ${EVM_CHAINS.join(', ')} (deposit addresses are EVM only)`);
  return chain;
}

/** The chain's sender over its configured RPC URLs, with `key` (a relayer key: gas only). */
function senderFor(config: Config, chain: ChainConfig, key: Hex, logger: Logger): { sender: DepositSender; close: () => Promise<void> } {
  const rpcConfig = config.rpc[chain.name];
  const urls = rpcConfig.http.length > 0 ? rpcConfig.http : rpcConfig.ws;
  if (urls.length === 0) throw new UsageError(`${chain.name} has no RPC URL here: set ${chain.rpcEnv.http}`);
  const rpc = createRpc({ chain: chain.name, urls, logger, metrics: createIngestMetrics(createMetricsRegistry({ defaultMetrics: false })) });
  return { sender: createDepositSender({ chain: chain.name, chainId: chain.chainId as number, key, rpc }), close: () => rpc.close() };
}

/** The relayer key of `chain`, or the key in the environment variable `--key-env` names (never a key on the command line). */
function keyFor(config: Config, env: Record<string, string | undefined>, chain: ChainName, keyEnv: unknown): Hex {
  if (typeof keyEnv === 'string') {
    const raw = env[keyEnv]?.trim();
    if (!raw) throw new UsageError(`--key-env ${keyEnv}: that environment variable is not set`);
    const hex = raw.startsWith('0x') ? raw : `0x${raw}`;
    if (!/^0x[0-9a-fA-F]{64}$/.test(hex)) throw new UsageError(`--key-env ${keyEnv}: must hold a 32-byte private key in hex`);
    return hex.toLowerCase() as Hex;
  }
  const key = config.relayerKeys[chain];
  if (!key) throw new UsageError(`${chain} has no relayer key: set ${relayerKeyVariableName(chain)} (a gas-only key), or name another variable with --key-env`);
  return key;
}

/** `svc deposits deploy-factory --chain C`: the deposit factory, at its one address, on that chain. */
export const depositsDeployFactory: Command = {
  summary: 'deploy the deposit-address factory on a chain through the deterministic deployment proxy (idempotent; same address everywhere)',
  usage: 'svc deposits deploy-factory --chain CHAIN [--key-env VARIABLE] [--json]',
  options: {
    chain: { type: 'string', description: `the EVM chain (${EVM_CHAINS.join(', ')}); its RPC URL must be set` },
    'key-env': {
      type: 'string',
      description: 'name of an environment variable holding the paying key (default: the chain’s SVC_<CHAIN>_RELAYER_KEY); it pays gas only',
    },
    ...jsonOption,
  },
  async run({ values, io, json }) {
    const chainName = evmChain(values);
    return withStore(io, async (store, { config, logger }) => {
      const { sender, close } = senderFor(config, loadChains()[chainName], keyFor(config, io.env, chainName, values['key-env']), logger);
      try {
        const result = await deployFactory({ store, sender });
        emit(
          io,
          json,
          { chain: chainName, ...result },
          result.deployed
            ? `${chainName}: deposit factory deployed at ${result.address} (tx ${result.txHash}, ${result.gasUsed} gas)`
            : `${chainName}: deposit factory already at ${result.address}`,
        );
        return 0;
      } finally {
        await close();
      }
    });
  },
};

/** `svc deposits sweep --chain C --session ID …`: flush sessions' deposit addresses into their merchants' wallets. */
export const depositsSweep: Command = {
  summary:
    'sweep sessions’ deposit addresses on a chain into their merchants’ wallets (also recovers payments sent on the wrong chain, wrong tokens and native coin)',
  usage: 'svc deposits sweep --chain CHAIN --session ID [--session ID …] [--token T …] [--json]',
  options: {
    chain: {
      type: 'string',
      description: `the EVM chain to sweep on (${EVM_CHAINS.join(', ')}); may differ from the session’s (a payment sent on the wrong chain)`,
    },
    session: { type: 'string', multiple: true, description: 'a live session (ses_…) whose deposit address to sweep; repeat for a batch' },
    token: {
      type: 'string',
      multiple: true,
      description: 'a token to flush: an address, a symbol of the chain (USDC, USDT) or "native"; repeatable (default: the chain’s tokens and the native coin)',
    },
    ...jsonOption,
  },
  async run({ values, io, json }) {
    const chainName = evmChain(values);
    const sessions = (values.session as string[] | undefined) ?? [];
    if (sessions.length === 0) throw new UsageError('--session is required (one or more)');
    const chain = loadChains()[chainName];
    const tokens = resolveTokens(chain, (values.token as string[] | undefined) ?? []);
    return withStore(io, async (store, { config, logger }) => {
      const livemodes = await store.query<{ id: string; livemode: boolean }>('SELECT id, livemode FROM payment_sessions WHERE id = ANY($1)', [sessions]);
      const sandbox = livemodes.rows.find((row) => !row.livemode);
      if (sandbox) throw new UsageError(`${sandbox.id} is a sandbox session: it has no real deposit address to sweep`);
      const { sender, close } = senderFor(config, chain, keyFor(config, io.env, chainName, undefined), logger);
      try {
        const planned = await withBalances(sender.client, await sessionDeposits(store, sessions, tokens));
        if (planned.length === 0) {
          emit(io, json, { chain: chainName, swept: [] }, `${chainName}: nothing to sweep (the deposit addresses hold none of those tokens)`);
          return 0;
        }
        const sweep = await sweepDeposits(
          { store, logger, sender, livemode: true, confirmations: typeof chain.confirmations.confirmed === 'number' ? chain.confirmations.confirmed : 0 },
          planned,
        );
        const symbol = (token: string) =>
          token === NATIVE_TOKEN ? 'native' : (chain.tokens.find((t) => t.address.toLowerCase() === token.toLowerCase())?.symbol ?? token);
        const decimals = (token: string) => (token === NATIVE_TOKEN ? 18 : chain.tokens.find((t) => t.address.toLowerCase() === token.toLowerCase())?.decimals);
        const lines = sweep.items.map((item) => {
          const units = decimals(item.token);
          const amount = item.amount === null ? '' : units === undefined ? `${item.amount} base units` : formatUnits(item.amount, units);
          return `  ${item.sessionId} ${item.depositAddress} ${symbol(item.token)}: ${item.outcome} ${amount}`.trimEnd();
        });
        emit(io, json, sweep, [`${chainName}: sweep ${sweep.id} ${sweep.status} (tx ${sweep.txHash}, ${sweep.gasUsed ?? '?'} gas)`, ...lines].join('\n'));
        return sweep.status === 'mined' && sweep.items.every((item) => item.outcome === 'flushed') ? 0 : 1;
      } finally {
        await close();
      }
    });
  },
};
