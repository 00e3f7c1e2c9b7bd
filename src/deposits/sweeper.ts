import { getAddress, parseUnits, type Hex } from 'viem';
import type { Registry } from 'prom-client';
import type { Store } from '../store/index.ts';
import type { ChainName, Config } from '../internal/config.ts';
import { loadChains, type ChainConfig } from '../internal/chains.ts';
import type { Logger } from '../internal/logger.ts';
import { sleep } from '../internal/shutdown.ts';
import { createRpc } from '../ingest/evm/rpc.ts';
import { createIngestMetrics } from '../ingest/metrics.ts';
import { depositSweeperLockText } from '../store/lockKeys.ts';
import { computeDepositAddress, depositSalt } from '../internal/depositAddress.ts';
import { recentFailures, unsweptDeposits, type UnsweptDeposit } from './candidates.ts';
import { createDepositMetrics, type DepositMetrics } from './metrics.ts';
import { createDepositSender, type DepositSender } from './sender.ts';
import { recordSweepMetrics, setUnsweptGauges } from './sweeperMetrics.ts';
import { recoverSweeps, sweepDeposits, type SweepContext, type SweepDeposit } from './sweep.ts';
import type { SweepRecord } from './sweeps.ts';

/**
 * The automatic deposit sweeper of the worker role (docs/deposit-addresses.md, "The automatic
 * sweeper"). Every pass, per EVM chain with a relayer key and an RPC URL, under that chain's
 * sweeper lock (lockKeys.ts `depositSweeperLockText`; a worker that cannot take it skips the chain,
 * so two workers never build overlapping batches): resolve sweeps left in flight, pick the
 * confirmed deposits no sweep covered (candidates.ts) that reach the token's minimum or have
 * waited the maximum age, check each session's recomputed deposit address, and sweep them in
 * batches through `sweepDeposits` (exactly once: sweep.ts). A pair whose flush keeps failing is
 * retried with a growing pause. Then it sets the unswept gauges.
 */
export interface Sweeper {
  /** The chains it sweeps. */
  chains: ChainName[];
  /** One pass over every chain; a chain's failure is logged and does not stop the others. */
  pass(): Promise<PassResult[]>;
  /** One pass over one chain. */
  passChain(chain: ChainName): Promise<PassResult>;
  /** Runs `pass` every `config.sweeper.intervalMs` until `signal` aborts, then closes the RPC pools. */
  run(signal: AbortSignal): Promise<void>;
  close(): Promise<void>;
}

export interface PassResult {
  chain: ChainName;
  /** `locked`: another worker held the chain's sweeper lock. */
  skipped?: 'locked';
  /** Sweeps this pass resolved (recovered or sent), in order. */
  sweeps: SweepRecord[];
  /** Sessions left out because their recorded deposit address is not the recomputed one. */
  mismatched: string[];
}

/** The longest pause before retrying a pair whose flush failed (it doubles per failure from the pass interval). */
const MAX_FAILURE_BACKOFF_MS = 6 * 3_600_000;

export function createSweeper(params: {
  store: Store;
  logger: Logger;
  metrics: Registry;
  config: Pick<Config, 'rpc' | 'relayerKeys' | 'sweeper'>;
  chains?: Record<ChainName, ChainConfig>;
  /** Tests pass senders on their own chains; by default one per chain with a relayer key and an RPC URL. */
  senders?: Partial<Record<ChainName, DepositSender>>;
  /** Receipt polling and the longest wait for one (sweep.ts defaults otherwise). */
  pollMs?: number;
  waitMs?: number;
}): Sweeper {
  const { store, config } = params;
  const logger = params.logger.child({ stage: 'deposit-sweeper' });
  const chains = params.chains ?? loadChains();
  const metrics: DepositMetrics = createDepositMetrics(params.metrics);
  const closers: (() => Promise<void>)[] = [];
  const senders: Partial<Record<ChainName, DepositSender>> = params.senders ?? {};
  /** Set by `run`: a shutdown stops a pass between two batches (the batch in flight is recorded; the next pass resolves it). */
  let stopping: AbortSignal | undefined;
  if (!params.senders) {
    for (const [name, key] of Object.entries(config.relayerKeys) as [ChainName, Hex][]) {
      const urls = config.rpc[name].http.length > 0 ? config.rpc[name].http : config.rpc[name].ws;
      if (!key || urls.length === 0 || chains[name].kind !== 'evm') continue;
      const rpc = createRpc({ chain: name, urls, logger, metrics: createIngestMetrics(params.metrics) });
      closers.push(() => rpc.close());
      senders[name] = createDepositSender({ chain: name, chainId: chains[name].chainId as number, key, rpc });
    }
  }

  function context(sender: DepositSender): SweepContext {
    const depth = chains[sender.chain].confirmations.confirmed;
    return {
      store,
      logger,
      sender,
      livemode: true,
      confirmations: typeof depth === 'number' ? depth : 0,
      ...(params.pollMs ? { pollMs: params.pollMs } : {}),
      // Bounded so a shutdown waits at most this long for a receipt; a sweep still unmined is resolved by the next pass.
      waitMs: params.waitMs ?? 30_000,
    };
  }

  /** The token's minimum in base units, by its currency; undefined for a token the chain does not configure (never swept automatically). */
  function minimumOf(chain: ChainConfig, token: string): bigint | undefined {
    const configured = chain.tokens.find((t) => t.address.toLowerCase() === token.toLowerCase());
    return configured ? parseUnits(config.sweeper.minimum[configured.currency], configured.decimals) : undefined;
  }

  /** The deposits due now, grouped per session; sessions whose address does not recompute are reported, not swept. */
  async function due(chain: ChainConfig, waiting: UnsweptDeposit[], now: number): Promise<{ deposits: SweepDeposit[]; mismatched: string[] }> {
    let since = now;
    for (const deposit of waiting) since = Math.min(since, deposit.oldest.getTime());
    const oldest = new Date(since);
    const failures = await recentFailures(store, chain.name, waiting, oldest);
    const bySession = new Map<string, SweepDeposit>();
    const mismatched = new Set<string>();
    for (const deposit of waiting) {
      const minimum = minimumOf(chain, deposit.token);
      if (minimum === undefined) continue;
      const old = now - deposit.oldest.getTime() >= config.sweeper.maxAgeSeconds * 1000;
      if (deposit.amount < minimum && !old) continue;
      const failed = failures.get(`${deposit.depositAddress.toLowerCase()}:${deposit.token.toLowerCase()}`);
      if (failed && now - failed.last.getTime() < Math.min(config.sweeper.intervalMs * 2 ** (failed.count - 1), MAX_FAILURE_BACKOFF_MS)) continue;
      // Defence in depth: the address the money sits at must be the one this wallet and session make.
      const recomputed = computeDepositAddress({ merchantWallet: deposit.payTo, sessionId: deposit.sessionId });
      if (getAddress(deposit.depositAddress) !== recomputed) {
        if (!mismatched.has(deposit.sessionId))
          logger.error({ msg: 'deposit address does not match its session; not sweeping it', session: deposit.sessionId, chain: chain.name });
        mismatched.add(deposit.sessionId);
        continue;
      }
      const entry = bySession.get(deposit.sessionId) ?? {
        sessionId: deposit.sessionId,
        destination: deposit.payTo,
        salt: depositSalt(deposit.sessionId),
        tokens: [],
      };
      entry.tokens.push(getAddress(deposit.token));
      bySession.set(deposit.sessionId, entry);
    }
    return { deposits: [...bySession.values()], mismatched: [...mismatched] };
  }

  async function sweepChain(sender: DepositSender): Promise<Omit<PassResult, 'chain'>> {
    const ctx = context(sender);
    const chain = chains[sender.chain];
    const sweeps: SweepRecord[] = [];
    const count = (sweep: SweepRecord) => {
      sweeps.push(sweep);
      recordSweepMetrics(metrics, chain, sweep);
    };
    for (const sweep of await recoverSweeps(ctx)) count(sweep);
    const { deposits, mismatched } = await due(chain, await unsweptDeposits(store, chain.name), Date.now());
    for (let start = 0; start < deposits.length && !stopping?.aborted; start += config.sweeper.batch) {
      const sweep = await sweepDeposits(ctx, deposits.slice(start, start + config.sweeper.batch));
      count(sweep);
      logger.info({ msg: 'deposit sweep done', chain: chain.name, sweep: sweep.id, status: sweep.status, deposits: sweep.items.length });
    }
    return { sweeps, mismatched };
  }

  async function passChain(name: ChainName): Promise<PassResult> {
    const sender = senders[name];
    if (!sender) throw new Error(`no deposit sender for ${name}`);
    const lockText = depositSweeperLockText(name);
    const client = await store.pool.connect();
    try {
      const { rows } = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS locked', [lockText]);
      if (!rows[0]!.locked) return { chain: name, skipped: 'locked', sweeps: [], mismatched: [] };
      try {
        return { chain: name, ...(await sweepChain(sender)) };
      } finally {
        await setUnsweptGauges(metrics, chains[name], await unsweptDeposits(store, name), Date.now()).catch(() => {});
        await client.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [lockText]);
      }
    } finally {
      client.release();
    }
  }

  const sweeper: Sweeper = {
    chains: Object.keys(senders) as ChainName[],
    passChain,
    async pass() {
      const results: PassResult[] = [];
      for (const chain of sweeper.chains) {
        try {
          results.push(await passChain(chain));
        } catch (error) {
          logger.error({ msg: 'deposit sweeper pass failed; the next pass resumes', chain, err: error });
        }
      }
      return results;
    },
    async run(signal) {
      stopping = signal;
      if (sweeper.chains.length > 0) logger.info({ msg: 'Deposit sweeper started', chains: sweeper.chains, interval_ms: config.sweeper.intervalMs });
      try {
        while (!signal.aborted) {
          await sweeper.pass();
          await sleep(config.sweeper.intervalMs, signal);
        }
      } finally {
        await sweeper.close();
      }
    },
    async close() {
      await Promise.all(closers.splice(0).map((close) => close()));
    },
  };
  return sweeper;
}
