import type pg from 'pg';
import type { ChainConfig } from '../../internal/chains.ts';
import type { ChainRpcConfig } from '../../internal/config.ts';
import type { Logger } from '../../internal/logger.ts';
import type { Registry } from '../../internal/metrics.ts';
import { sleep } from '../../internal/shutdown.ts';
import type { Sql, Store } from '../../store/index.ts';
import { Gauge } from 'prom-client';
import { createIngestMetrics } from '../evm/metrics.ts';
import { associatedTokenAccounts, loadTokenAccounts, loadWatchedOwners, ownedTokenAccounts, saveTokenAccounts, type WatchedMint } from './accounts.ts';
import { createSolanaRpcPool } from './rpc.ts';
import { loadPendingAccounts, saveChainHead } from './sql.ts';
import { createSolanaWatcher, type SolanaWatcher } from './subscriptions.ts';
import { syncTokenAccount } from './syncTokenAccount.ts';

export { parseTokenCredits, type RpcTransaction, type TokenCredit } from './parse.ts';

/**
 * What changed, told to the engine after each commit, in the EVM ingesters' vocabulary:
 * `transfers` (new or restored rows), `reorg` (transactions that vanished before finalization had
 * their transfers removed), `head` (the confirmed slot moved), `finalized` (the finalized slot moved).
 */
export interface SolanaChainChange {
  chain: 'solana';
  livemode: true;
  kind: 'transfers' | 'reorg' | 'head' | 'finalized';
}

export interface SolanaIngester {
  /** Starts in the background: stands by until it holds the chain's advisory lock, then ingests. */
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
  status(): { state: 'standby' } | { state: 'leader' } | { state: 'retrying'; error: string } | { state: 'stopped' };
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
/** New wallets are picked up this often, and their non-associated token accounts rediscovered. */
const DISCOVER_INTERVAL_MS = 60_000;
/** After a failed getTokenAccountsByOwner, discovery alone waits 5 s, doubling to 10 minutes, while ingestion goes on. */
const DISCOVER_BACKOFF_MS = 5_000;
const DISCOVER_BACKOFF_MAX_MS = 600_000;
/**
 * With WebSocket up, a woken account whose new transaction was not served yet (the notification
 * often beats the node's transaction-status index) is synced again after this long, up to
 * RECHECK_ATTEMPTS times, instead of waiting for the next sweep.
 */
const RECHECK_DELAY_MS = 500;
const RECHECK_ATTEMPTS = 5;
/** A standby process retries the advisory lock this often. */
const LOCK_RETRY_MS = 5_000;

/** Retry periods a former leader sits out after losing its lock, leaving the lock to the standbys. */
const LOST_LOCK_BACKOFF_RETRIES = 3;
/** Backoff after a failed pass: 1 s doubling to 30 s. */
const ERROR_BACKOFF_MS = 1_000;
const ERROR_BACKOFF_MAX_MS = 30_000;
/** Token accounts synced in parallel per pass; each sync is a few sequential RPC calls. */
const ACCOUNT_CONCURRENCY = 4;
/** Advisory lock key (two int4 halves): one active Solana ingester per database (docs/architecture.md rule 8). */
export const LOCK_KEY = [0x73766300, 0x736f6c];

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
  lockRetryMs?: number;
  /** See ORPHAN_GRACE_MS in syncTokenAccount.ts. */
  orphanGraceMs?: number;
}): SolanaIngester {
  const log = params.logger.child({ stage: 'ingest', chain: 'solana' });
  const metrics = createIngestMetrics(params.metrics);
  const lagSlots =
    (params.metrics.getSingleMetric('svc_ingest_solana_lag_slots') as Gauge | undefined) ??
    new Gauge({
      name: 'svc_ingest_solana_lag_slots',
      help: 'Slots between the newest slot seen (processed, over WebSocket; else confirmed) and the confirmed slot at the start of the last completed ingest pass; at rest with WebSocket about the 1-3 slot processed-to-confirmed gap',
      registers: [params.metrics],
    });
  let headSlot = 0n;
  let passSlot: bigint | undefined;
  const updateLag = () => {
    if (passSlot !== undefined) lagSlots.set(Number(headSlot > passSlot ? headSlot - passSlot : 0n));
  };
  const tuning = (params.chain as ChainConfig & { ingest?: SolanaIngestTuning }).ingest ?? { backfillSlots: 9000, signaturePageSize: 1000 };
  const mints: WatchedMint[] = params.chain.tokens.map((token) => ({ mint: token.address, tokenProgram: token.tokenProgram ?? 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA' }));
  const mintSet = new Set(mints.map((mint) => mint.mint));
  const tokenPrograms = new Set(mints.map((mint) => mint.tokenProgram));
  const pollMs = params.pollIntervalMs ?? POLL_INTERVAL_MS;
  const sweepMs = params.sweepIntervalMs ?? WS_SWEEP_INTERVAL_MS;
  const discoverMs = params.discoverIntervalMs ?? DISCOVER_INTERVAL_MS;

  const controller = new AbortController();
  const rpc = createSolanaRpcPool({ urls: params.rpc.http, logger: log, metrics, signal: controller.signal });
  let watcher: SolanaWatcher | undefined;
  let loop: Promise<void> | undefined;
  let lockClient: pg.PoolClient | undefined;
  const dirty = new Set<string>();
  let wake: (() => void) | undefined;
  /** Owners whose associated token accounts are saved (derived, no RPC). */
  const derivedOwners = new Set<string>();
  /** Owners whose other token accounts were listed (getTokenAccountsByOwner) at least once. */
  const knownOwners = new Set<string>();
  let lastDiscovery = 0;
  /** Discovery's own back-off: a failing getTokenAccountsByOwner must not stop ingestion. */
  let discoveryFailures = 0;
  let discoveryRetryAt = 0;
  /** Woken token accounts waiting for a re-check, and how many were done. */
  const rechecks = new Map<string, { attempts: number; timer: NodeJS.Timeout | undefined }>();
  /** Per token account: when each of its undecided signatures was first seen undecided. */
  const undecided = new Map<string, Map<string, number>>();
  let lastSweep = 0;
  let lastFinalized = -1n;
  let state: ReturnType<SolanaIngester['status']> = { state: 'stopped' };

  function signal() {
    wake?.();
  }

  async function notify(kind: SolanaChainChange['kind']) {
    try {
      await params.onChainChange?.({ chain: 'solana', livemode: true, kind });
    } catch (error) {
      log.error({ msg: 'onChainChange failed', kind, err: error });
    }
  }

  /**
   * Watches new wallets' associated token accounts at once (derived: no RPC), then lists their
   * other token accounts, and everyone's every `discoverMs`. A failing getTokenAccountsByOwner
   * (some providers disable or throttle it) is logged once per failure streak, counted in
   * rpc_errors_total by the pool, and retried on its own back-off: it never fails the pass.
   */
  async function discover(confirmedSlot: bigint) {
    const owners = await loadWatchedOwners(params.store);
    const floorSlot = confirmedSlot - BigInt(tuning.backfillSlots);
    const floor = floorSlot > 0n ? floorSlot : 0n;
    let added = 0;
    const fresh = owners.filter((owner) => !derivedOwners.has(owner));
    if (fresh.length > 0) {
      const derived = (await Promise.all(fresh.map((owner) => associatedTokenAccounts(owner, mints)))).flat();
      added += await saveTokenAccounts(params.store, derived, floor);
      for (const owner of fresh) derivedOwners.add(owner);
    }
    const due = Date.now() - lastDiscovery >= discoverMs;
    const targets = due ? owners : owners.filter((owner) => !knownOwners.has(owner));
    if (targets.length > 0 && Date.now() >= discoveryRetryAt) {
      let failed = false;
      for (const owner of targets) {
        try {
          added += await saveTokenAccounts(params.store, await ownedTokenAccounts(rpc, owner, mints), floor);
          knownOwners.add(owner);
        } catch (error) {
          if (controller.signal.aborted) throw error;
          // Every URL refused it (the pool already retried): the rest would too; try again later.
          const retryMs = Math.min(DISCOVER_BACKOFF_MAX_MS, DISCOVER_BACKOFF_MS * 2 ** discoveryFailures);
          if (discoveryFailures === 0) log.warn({ msg: 'Token account discovery failed; known accounts are still ingested, discovery retries on its own back-off', owner, retry_in_ms: retryMs, err: error });
          discoveryFailures += 1;
          discoveryRetryAt = Date.now() + retryMs;
          failed = true;
          break;
        }
      }
      if (!failed) {
        if (discoveryFailures > 0) log.info({ msg: 'Token account discovery works again', failures: discoveryFailures });
        discoveryFailures = 0;
        discoveryRetryAt = 0;
        if (due) lastDiscovery = Date.now();
      }
    }
    if (added > 0) log.info({ msg: 'Watching new token accounts', added, owners: owners.length });
  }

  async function pass() {
    const finalizedSlot = BigInt(await rpc.call('getSlot', (client) => client.getSlot({ commitment: 'finalized' })));
    const confirmedSlot = BigInt(await rpc.call('getSlot', (client) => client.getSlot({ commitment: 'confirmed' })));
    metrics.headBlock.set({ chain: 'solana' }, Number(confirmedSlot));
    if (confirmedSlot > headSlot) headSlot = confirmedSlot;
    metrics.finalizedBlock.set({ chain: 'solana' }, Number(finalizedSlot));
    metrics.lastHeadAt.set('solana', Date.now());
    await discover(confirmedSlot);

    const accounts = await loadTokenAccounts(params.store);
    watcher?.watch(accounts.map((account) => account.address));
    const fullSweep = !watcher?.connected || Date.now() - lastSweep >= sweepMs;
    const pending = await loadPendingAccounts(params.store);
    const woken = new Set(dirty);
    dirty.clear();
    const selected = fullSweep ? accounts : accounts.filter((account) => pending.has(account.address) || woken.has(account.address));

    let failed = 0;
    let transfers = 0;
    let removed = 0;
    /** Lowest slot of a stored signature not decided yet although finalized by slot: finalized_block stays below it. */
    let undecidedSlot: bigint | null = null;
    const queue = [...selected];
    await Promise.all(
      Array.from({ length: Math.min(ACCOUNT_CONCURRENCY, queue.length) }, async () => {
        for (let account = queue.shift(); account && !controller.signal.aborted; account = queue.shift()) {
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
              signal: controller.signal,
              fence,
              undecidedSince,
              ...(params.orphanGraceMs !== undefined ? { orphanGraceMs: params.orphanGraceMs } : {}),
            });
            if (undecidedSince.size === 0) undecided.delete(account.address);
            scheduleRecheck(account.address, woken.has(account.address) || rechecks.has(account.address), result.recorded === 0 || result.unstored > 0);
            if (result.undecidedSlot !== null && (undecidedSlot === null || result.undecidedSlot < undecidedSlot)) undecidedSlot = result.undecidedSlot;
            transfers += result.transfers;
            removed += result.removed;
            if (result.transfers > 0) await notify('transfers');
            if (result.removed > 0) await notify('reorg');
          } catch (error) {
            failed += 1;
            dirty.add(account.address);
            if (!controller.signal.aborted) log.warn({ msg: 'Token account sync failed; retrying next pass', token_account: account.address, err: error });
          }
        }
      }),
    );
    if (controller.signal.aborted) return;
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
    if (failed > 0) throw new Error(`${failed} token account(s) failed to sync`);
  }

  /**
   * A woken account that came back with nothing new, or with listed signatures not stored yet, is
   * synced again in RECHECK_DELAY_MS, at most RECHECK_ATTEMPTS times per wake-up. Only with the
   * WebSocket up: polling and sweeps sync every account anyway.
   */
  function scheduleRecheck(account: string, woken: boolean, unfinished: boolean) {
    const entry = rechecks.get(account);
    if (!woken || !unfinished || !watcher?.connected || controller.signal.aborted || (entry?.attempts ?? 0) >= RECHECK_ATTEMPTS) {
      if (entry?.timer) clearTimeout(entry.timer);
      rechecks.delete(account);
      return;
    }
    if (entry?.timer) return;
    const next = { attempts: (entry?.attempts ?? 0) + 1, timer: undefined as NodeJS.Timeout | undefined };
    next.timer = setTimeout(() => {
      next.timer = undefined;
      dirty.add(account);
      signal();
    }, RECHECK_DELAY_MS);
    next.timer.unref?.();
    rechecks.set(account, next);
  }

  /** Sleeps up to `ms`, waking early on a notification or on stop (also when already stopped). */
  async function waitForWork(ms: number) {
    if (controller.signal.aborted) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      wake = done;
      controller.signal.addEventListener('abort', done, { once: true });
      function done() {
        clearTimeout(timer);
        wake = undefined;
        controller.signal.removeEventListener('abort', done);
        resolve();
      }
    });
  }

  /** The backend that holds the ingester lock, for {@link fence}. */
  let lockPid: number | undefined;

  /**
   * Inside every ingest transaction: proceed only while this process's lock session still holds
   * the lock, so a leader that lost it (its connection broke, another process took over) cannot
   * write a single row more, even mid-pass.
   */
  async function fence(sql: Sql): Promise<void> {
    const { rowCount } = await sql.query(
      `SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND classid = $1::bigint::oid AND objid = $2::bigint::oid AND objsubid = 2 AND pid = $3 AND granted`,
      [LOCK_KEY[0], LOCK_KEY[1], lockPid ?? -1],
    );
    if (rowCount !== 1) throw new Error('lost the Solana ingester lock; another process may be ingesting now');
  }

  async function acquireLock(): Promise<boolean> {
    const client = await params.store.pool.connect();
    try {
      const { rows } = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1, $2) AS locked', LOCK_KEY);
      if (rows[0]?.locked) {
        lockClient = client;
        lockPid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
        // A dead lock connection means Postgres dropped the lock: the next ping sees it.
        client.on('error', (error) => log.error({ msg: 'The Solana ingester lock connection failed', err: error }));
        return true;
      }
      client.release();
      return false;
    } catch (error) {
      client.release();
      throw error;
    }
  }

  /** True while the lock's connection answers: a session advisory lock lives exactly as long as its session. */
  async function stillLeading(): Promise<boolean> {
    try {
      await lockClient?.query('SELECT 1');
      return lockClient !== undefined;
    } catch {
      return false;
    }
  }

  async function releaseLock(how: { broken: boolean }) {
    const client = lockClient;
    lockClient = undefined;
    if (!client) return;
    if (!how.broken) await client.query('SELECT pg_advisory_unlock($1, $2)', LOCK_KEY).catch(() => {});
    client.release(how.broken);
  }

  async function standBy(): Promise<void> {
    const lockRetryMs = params.lockRetryMs ?? LOCK_RETRY_MS;
    let logged = false;
    state = { state: 'standby' };
    while (!controller.signal.aborted) {
      try {
        if (await acquireLock()) return;
      } catch (error) {
        log.warn({ msg: 'Could not take the Solana ingester lock', err: error });
      }
      if (!logged) log.info({ msg: 'Another process ingests solana; standing by' });
      logged = true;
      await sleep(lockRetryMs, controller.signal);
    }
  }

  /** Ingests until stopped or until the lock is lost (then the caller stands by again). */
  async function lead(): Promise<void> {
    metrics.leader.set({ chain: 'solana' }, 1);
    state = { state: 'leader' };
    log.info({ msg: 'Solana ingester active', rpc_endpoints: rpc.endpoints, websocket: params.rpc.ws.length > 0 });
    if (params.rpc.ws.length > 0) {
      watcher = createSolanaWatcher({
        urls: params.rpc.ws,
        logger: log,
        signal: controller.signal,
        onAccountChange: (account) => {
          dirty.add(account);
          signal();
        },
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
          signal();
        },
      });
    }
    let backoff = ERROR_BACKOFF_MS;
    try {
      while (!controller.signal.aborted) {
        if (!(await stillLeading())) {
          log.warn({ msg: 'Lost the Solana ingester lock; standing by' });
          return;
        }
        try {
          await pass();
          backoff = ERROR_BACKOFF_MS;
          state = { state: 'leader' };
        } catch (error) {
          if (controller.signal.aborted) break;
          state = { state: 'retrying', error: String((error as Error).message ?? error).split('\n')[0] ?? 'error' };
          log.warn({ msg: 'Solana ingest pass failed', err: error, retry_in_ms: backoff });
          await sleep(backoff, controller.signal);
          backoff = Math.min(ERROR_BACKOFF_MAX_MS, backoff * 2);
          continue;
        }
        if (dirty.size > 0) continue;
        // Pending signatures need their finalization checked about as often as the poll.
        await waitForWork(watcher?.connected ? Math.min(sweepMs, pollMs * 2) : pollMs);
      }
    } finally {
      for (const entry of rechecks.values()) if (entry.timer) clearTimeout(entry.timer);
      rechecks.clear();
      watcher?.stop();
      watcher = undefined;
      metrics.leader.set({ chain: 'solana' }, 0);
    }
  }

  async function run() {
    while (!controller.signal.aborted) {
      await standBy();
      if (controller.signal.aborted) return;
      await lead();
      await releaseLock({ broken: !controller.signal.aborted });
      // A process that just lost its lock (its database connection broke) is the likeliest to be
      // unhealthy: it waits a few retry periods, so a healthy standby takes over first.
      state = { state: 'standby' };
      await sleep(LOST_LOCK_BACKOFF_RETRIES * (params.lockRetryMs ?? LOCK_RETRY_MS), controller.signal);
    }
  }

  return {
    async start() {
      loop ??= run().catch((error) => log.error({ msg: 'Solana ingester stopped on an error', err: error }));
    },
    async stop() {
      controller.abort();
      watcher?.stop();
      await loop;
      await releaseLock({ broken: false });
      metrics.leader.set({ chain: 'solana' }, 0);
      state = { state: 'stopped' };
    },
    async syncOnce() {
      if (lockPid === undefined && !(await acquireLock())) throw new Error('another process holds the Solana ingester lock; it is ingesting now');
      await pass();
    },
    status: () => ({ ...state }),
  };
}
