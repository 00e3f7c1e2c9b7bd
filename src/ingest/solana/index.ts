import type { ChainConfig } from '../../internal/chains.ts';
import type { ChainRpcConfig } from '../../internal/config.ts';
import { RetryableError } from '../../internal/errors.ts';
import { createBackoff, type BackoffRule } from '../../internal/failureBackoff.ts';
import type { Logger } from '../../internal/logger.ts';
import type { Registry } from '../../internal/metrics.ts';
import { sleep } from '../../internal/shutdown.ts';
import type { Sql, Store } from '../../store/index.ts';
import { SOLANA_INGEST_LOCK } from '../../store/lockKeys.ts';
import type { ChainChange } from '../changes.ts';
import { createLeaderLocks, LeadershipLostError, type LeaderLocks, type Lease } from '../leader.ts';
import { createIngestMetrics, createSolanaLagGauge } from '../metrics.ts';
import { superviseChain, type ChainIngestState, type ChainSupervisor, type LeadContext } from '../supervisor.ts';
import { loadTokenAccounts, type WatchedMint } from './accounts.ts';
import { createDiscovery, DISCOVER_INTERVAL_MS } from './discovery.ts';
import { createSolanaRpcPool } from './rpc.ts';
import { loadPendingAccounts, saveChainHead } from './sql.ts';
import { createSolanaWatcher, type SolanaWatcher } from './subscriptions.ts';
import { syncTokenAccount } from './syncTokenAccount.ts';
import { createWakeups } from './wakeups.ts';

export { parseTokenCredits, type RpcTransaction, type TokenCredit } from './parse.ts';

/** A {@link ChainChange} of solana: `head` is the confirmed slot, `finalized` the finalized slot. */
export interface SolanaChainChange extends ChainChange {
  chain: 'solana';
}

/** One process's Solana ingester (see {@link createSolanaIngester}). */
export interface SolanaIngester {
  /** Starts in the background, supervised like every chain (../supervisor.ts): stands by until it holds the chain's leader lock, then ingests. */
  start(): Promise<void>;
  /** Stops the loop, the WebSocket and releases the lock; resolves when everything is closed. */
  stop(): Promise<void>;
  /**
   * Runs one pass now (benchmarks, tools); normally the loop does this. Takes the chain's lock
   * first when this process does not hold it (every commit checks it), and refuses when another
   * process does; `stop()` releases it.
   */
  syncOnce(): Promise<void>;
  /** Where this process stands: waiting for the lock, ingesting, retrying after an error, stopped. */
  status(): ChainIngestState;
}

/** Tuning read from chains/solana.json's `ingest` block (see its `why`). */
interface SolanaIngestTuning {
  backfillSlots: number;
  signaturePageSize: number;
}

/** Without WebSocket, every token account is polled this often; Solana makes a slot every ~400 ms, and 2 s keeps detection within a few seconds at one request per account per poll. */
const POLL_INTERVAL_MS = 2_000;
/** With WebSocket up, notifications drive the passes; a full sweep still runs this often in case one was missed. */
const WS_SWEEP_INTERVAL_MS = 30_000;
/** Backoff after a failed pass: 1 s doubling to 30 s. */
const ERROR_BACKOFF: BackoffRule = { initialMs: 1_000, maxMs: 30_000 };
/** Token accounts synced in parallel per pass; each sync is a few sequential RPC calls. */
const ACCOUNT_CONCURRENCY = 4;

/**
 * Creates the Solana ingester: watches the USDC and USDT token accounts of every solana wallet,
 * stores each credit as a `transfers` row (chain 'solana', tx_hash = signature, log_index = the
 * token account's index in the transaction's account list, block_number = slot), tracks the
 * `confirmed` and `finalized` slots in `chain_heads`, and calls `onChainChange` after each commit.
 */
export function createSolanaIngester(params: {
  store: Store;
  logger: Logger;
  metrics: Registry;
  chain: ChainConfig;
  rpc: ChainRpcConfig;
  onChainChange?: (change: SolanaChainChange) => void | Promise<void>;
  /** Overrides for tests; production uses the constants above. */
  pollIntervalMs?: number;
  sweepIntervalMs?: number;
  discoverIntervalMs?: number;
  /** How often a standby tries the lock (default: the supervisor's). */
  standbyPollMs?: number;
  /**
   * This process's leader locks, shared with its other chains (createIngest passes them); without,
   * the ingester opens its own lock connection with the store's settings.
   */
  locks?: LeaderLocks;
  /** See ORPHAN_GRACE_MS in syncTokenAccount.ts. */
  orphanGraceMs?: number;
}): SolanaIngester {
  const log = params.logger.child({ stage: 'ingest', chain: 'solana' });
  const metrics = createIngestMetrics(params.metrics);
  const lagSlots = createSolanaLagGauge(params.metrics);
  let headSlot = 0n;
  let passSlot: bigint | undefined;
  const updateLag = () => {
    if (passSlot !== undefined) lagSlots.set(Number(headSlot > passSlot ? headSlot - passSlot : 0n));
  };
  const tuning = (params.chain as ChainConfig & { ingest?: SolanaIngestTuning }).ingest ?? { backfillSlots: 9000, signaturePageSize: 1000 };
  const mints: WatchedMint[] = params.chain.tokens.map((token) => ({
    mint: token.address,
    tokenProgram: token.tokenProgram ?? 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA',
  }));
  const mintSet = new Set(mints.map((mint) => mint.mint));
  const tokenPrograms = new Set(mints.map((mint) => mint.tokenProgram));
  const pollMs = params.pollIntervalMs ?? POLL_INTERVAL_MS;
  const sweepMs = params.sweepIntervalMs ?? WS_SWEEP_INTERVAL_MS;

  const controller = new AbortController();
  const rpc = createSolanaRpcPool({ urls: params.rpc.http, logger: log, metrics, signal: controller.signal });
  const locks = params.locks ?? createLeaderLocks({ connection: params.store.pool.options, logger: log });
  let watcher: SolanaWatcher | undefined;
  let supervisor: ChainSupervisor | undefined;
  /** The lease a one-off `syncOnce()` took (the supervisor's own is in its loop). */
  let onceLease: Lease | undefined;
  /** The lease the supervised loop leads under, while it does. */
  let leading: Lease | undefined;
  const wakeups = createWakeups();
  const discovery = createDiscovery({
    store: params.store,
    rpc,
    mints,
    backfillSlots: tuning.backfillSlots,
    discoverMs: params.discoverIntervalMs ?? DISCOVER_INTERVAL_MS,
    logger: log,
  });
  /** Per token account: when each of its undecided signatures was first seen undecided. */
  const undecided = new Map<string, Map<string, number>>();
  let lastSweep = 0;
  let lastFinalized = -1n;

  async function notify(kind: SolanaChainChange['kind']) {
    try {
      await params.onChainChange?.({ chain: 'solana', livemode: true, kind });
    } catch (error) {
      log.error({ msg: 'onChainChange failed', kind, err: error });
    }
  }

  /** One pass over the token accounts, as the leader: `fence` runs inside every commit, `signal` ends the pass early. */
  async function pass(run: { fence: (sql: Sql) => Promise<void>; signal: AbortSignal }) {
    const finalizedSlot = BigInt(await rpc.call('getSlot', (client) => client.getSlot({ commitment: 'finalized' })));
    const confirmedSlot = BigInt(await rpc.call('getSlot', (client) => client.getSlot({ commitment: 'confirmed' })));
    metrics.headBlock.set({ chain: 'solana' }, Number(confirmedSlot));
    if (confirmedSlot > headSlot) headSlot = confirmedSlot;
    metrics.finalizedBlock.set({ chain: 'solana' }, Number(finalizedSlot));
    metrics.lastHeadAt.set('solana', Date.now());
    await discovery.run(confirmedSlot, run.signal);

    const accounts = await loadTokenAccounts(params.store);
    watcher?.watch(accounts.map((account) => account.address));
    const fullSweep = !watcher?.connected || Date.now() - lastSweep >= sweepMs;
    const pending = await loadPendingAccounts(params.store);
    const woken = wakeups.take();
    const selected = fullSweep ? accounts : accounts.filter((account) => pending.has(account.address) || woken.has(account.address));

    let failed = 0;
    let transfers = 0;
    let removed = 0;
    /** Lowest slot of a stored signature not decided yet although finalized by slot: finalized_block stays below it. */
    let undecidedSlot: bigint | null = null;
    /** Set by the fence: another process leads now, so the pass ends without touching another account. */
    let lost: LeadershipLostError | undefined;
    const queue = [...selected];
    await Promise.all(
      Array.from({ length: Math.min(ACCOUNT_CONCURRENCY, queue.length) }, async () => {
        for (let account = queue.shift(); account && !run.signal.aborted && !lost; account = queue.shift()) {
          try {
            let undecidedSince = undecided.get(account.address);
            if (!undecidedSince) undecided.set(account.address, (undecidedSince = new Map()));
            const result = await syncTokenAccount({
              store: params.store,
              rpc,
              account,
              finalizedSlot,
              mints: mintSet,
              tokenPrograms,
              pageSize: tuning.signaturePageSize,
              signal: run.signal,
              fence: run.fence,
              undecidedSince,
              ...(params.orphanGraceMs !== undefined ? { orphanGraceMs: params.orphanGraceMs } : {}),
            });
            if (undecidedSince.size === 0) undecided.delete(account.address);
            wakeups.recheck(account.address, {
              woken: woken.has(account.address) || wakeups.rechecking(account.address),
              unfinished: result.recorded === 0 || result.unstored > 0,
              enabled: !!watcher?.connected && !controller.signal.aborted,
            });
            if (result.undecidedSlot !== null && (undecidedSlot === null || result.undecidedSlot < undecidedSlot)) undecidedSlot = result.undecidedSlot;
            transfers += result.transfers;
            removed += result.removed;
            if (result.transfers > 0) await notify('transfers');
            if (result.removed > 0) await notify('reorg');
          } catch (error) {
            if (error instanceof LeadershipLostError) {
              lost = error;
              break;
            }
            failed += 1;
            wakeups.mark(account.address);
            if (!run.signal.aborted) log.warn({ msg: 'Token account sync failed; retrying next pass', token_account: account.address, err: error });
          }
        }
      }),
    );
    if (run.signal.aborted) return;
    if (lost) throw lost;
    if (transfers > 0) metrics.transfers.inc({ chain: 'solana' }, transfers);
    if (removed > 0) {
      metrics.reorgs.inc({ chain: 'solana' });
      log.warn({ msg: 'Transactions vanished before finalization; their transfers are removed', removed });
    }
    // finalized_block may only move once every signature waiting on it was checked (rule 4): a
    // transfer at or below it is final. processed_block: every account was swept up to the head.
    const complete = failed === 0;
    const settledSlot = undecidedSlot !== null && undecidedSlot <= finalizedSlot ? undecidedSlot - 1n : finalizedSlot;
    await saveChainHead(params.store, {
      confirmedSlot,
      finalizedSlot: complete ? settledSlot : null,
      processedSlot: complete && fullSweep ? confirmedSlot : null,
    });
    if (complete && fullSweep) {
      lastSweep = Date.now();
      metrics.processedBlock.set({ chain: 'solana' }, Number(confirmedSlot));
      metrics.blocks.inc({ chain: 'solana' });
    }
    if (complete) {
      passSlot = confirmedSlot;
      updateLag();
    }
    await notify('head');
    if (complete && settledSlot > lastFinalized) {
      lastFinalized = settledSlot;
      await notify('finalized');
    }
    if (failed > 0) throw new RetryableError(`${failed} token account(s) failed to sync`);
  }

  /**
   * Ingests while this process leads (the supervisor took the lock): passes until `signal` aborts
   * (stop, or the lease is lost). A failed pass is retried here with backoff; the fence's
   * {@link LeadershipLostError} ends the run, and the supervisor stands by again.
   */
  async function lead({ lease, signal, retrying, healthy }: LeadContext): Promise<void> {
    log.info({ msg: 'Solana ingester active', rpc_endpoints: rpc.endpoints, websocket: params.rpc.ws.length > 0 });
    leading = lease;
    if (params.rpc.ws.length > 0) {
      watcher = createSolanaWatcher({
        urls: params.rpc.ws,
        logger: log,
        signal,
        onAccountChange: (account) => wakeups.notify(account),
        onSlot: (slot) => {
          // slotSubscribe reports *processed* slots: they show the node is alive and feed the lag,
          // but the head gauge stays the confirmed slot each pass reads, so it never moves back.
          metrics.lastHeadAt.set('solana', Date.now());
          if (slot > headSlot) headSlot = slot;
          updateLag();
        },
        // Up: subscriptions may have been missing while it was down, so sweep now; down: poll.
        onConnectionChange: (connected) => {
          if (connected) lastSweep = 0;
          wakeups.wake();
        },
      });
    }
    const failures = createBackoff(ERROR_BACKOFF);
    try {
      while (!signal.aborted) {
        try {
          await pass({ fence: lease.fence, signal });
          failures.succeeded();
          healthy();
        } catch (error) {
          if (signal.aborted) break;
          if (error instanceof LeadershipLostError) throw error;
          const wait = failures.failed();
          retrying(error);
          log.warn({ msg: 'Solana ingest pass failed', err: error, retry_in_ms: wait });
          await sleep(wait, signal);
          continue;
        }
        if (wakeups.pending) continue;
        // Pending signatures need their finalization checked about as often as the poll.
        await wakeups.wait(watcher?.connected ? Math.min(sweepMs, pollMs * 2) : pollMs, signal);
      }
    } finally {
      leading = undefined;
      wakeups.clear();
      watcher?.stop();
      watcher = undefined;
    }
  }

  return {
    async start() {
      supervisor ??= superviseChain({
        chain: 'solana',
        lockKey: SOLANA_INGEST_LOCK,
        locks,
        logger: log,
        metrics,
        signal: controller.signal,
        standbyPollMs: params.standbyPollMs,
        lead,
      });
    },
    async stop() {
      controller.abort();
      watcher?.stop();
      await supervisor?.done;
      await onceLease?.release();
      onceLease = undefined;
      if (!params.locks) await locks.close();
    },
    async syncOnce() {
      const lease = leading ?? (onceLease ??= await locks.tryAcquire(SOLANA_INGEST_LOCK, 'solana'));
      if (!lease) throw new LeadershipLostError('another process holds the Solana ingester lock; it is ingesting now');
      await pass({ fence: lease.fence, signal: controller.signal });
    },
    status: () => supervisor?.status() ?? { state: 'stopped' },
  };
}
