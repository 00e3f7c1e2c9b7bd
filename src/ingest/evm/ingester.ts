import type { ChainConfig } from '../../internal/chains.ts';
import type { Logger } from '../../internal/logger.ts';
import { NonRetryableError, RetryableError } from '../../internal/errors.ts';
import { createBackoff } from '../../internal/failureBackoff.ts';
import { COMMITS_IN_FLIGHT, DEFAULT_CONCURRENCY, ERROR_BACKOFF, pollInterval, TAG_REFRESH_MS } from './tuning.ts';
import { sleep } from '../../internal/shutdown.ts';
import type { Sql, Store } from '../../store/index.ts';
import { tellChange, type ChainChange, type OnChainChange } from '../changes.ts';
import { checkChain } from './checks.ts';
import { createChainTips } from './chainTips.ts';
import { ChainMovedError, createRangeFetcher, type FetchedRange } from './fetch.ts';
import { createRangeSize, PROBE_BLOCKS } from './rangeSize.ts';
import { createHeadSignal } from './heads.ts';
import { LeadershipLostError } from '../leader.ts';
import type { IngestMetrics } from '../metrics.ts';
import { commitRange, loadState, type BlockHeader } from './persist.ts';
import { createBranchTracker } from './reorg.ts';
import type { Rpc } from './rpc.ts';
import { createWatchedWallets } from './watched.ts';

/** Real dependencies of one chain's ingester; tests and the benchmark pass their own. */
export interface EvmIngesterParams {
  chain: ChainConfig;
  rpc: Rpc;
  /** WebSocket URLs for `newHeads`; empty: poll. */
  wsUrls: string[];
  store: Store;
  logger: Logger;
  metrics: IngestMetrics;
  onChainChange: OnChainChange;
  signal: AbortSignal;
  /** First start only: begin this many blocks below the head (default: the chain's `logs.backfillBlocks`). */
  backfillBlocks?: number;
  /** Concurrent `eth_getLogs` ranges while catching up (p-limit). */
  concurrency?: number;
  /** Checked inside every commit: throws when this process is no longer the chain's leader. */
  fence?: (sql: Sql) => Promise<void>;
  /** Poll interval; default from the block time. */
  pollMs?: number;
}

/** One chain's ingester (see {@link createEvmIngester}). */
export interface EvmIngester {
  /** Runs until `signal` aborts; rejects on a start-up check failure or an unrecoverable error. */
  run(): Promise<void>;
}

/**
 * One chain's ingester. Its invariant, kept across crashes because it only moves in one
 * transaction (persist.ts): every block up to `processed_block` has had its Transfer logs to the
 * wallets watched at that time stored, and `chain_blocks` holds the hash-linked headers of the
 * processed blocks above `finalized` (plus the newest one below).
 *
 * A cycle reads the head, `safe` and `finalized`, refreshes the watched wallets, then processes
 * [processed + 1, head] in ranges: headers of unfinalized blocks first (a block whose
 * `logsBloom` rules out the tokens and wallets needs no `eth_getLogs` when the whole range is
 * unfinalized), then the logs, checked against the headers' hashes. A first header whose parent
 * is not the stored block below it is a reorg: walk back to the common ancestor, then the next
 * commit marks every transfer above it removed and re-stores the new branch in one transaction,
 * so a transfer that merely moved is never seen removed (reorg.ts tells the whole story).
 */
export function createEvmIngester(params: EvmIngesterParams): EvmIngester {
  const { chain, rpc, store, metrics, signal } = params;
  const name = chain.name;
  // createIngest passes its logger with stage=ingest already.
  const log = params.logger.child({ chain: name });
  const labels = { chain: name };
  const confirmedDepth = BigInt(chain.confirmations.confirmed as number);
  const logsConfig = chain.logs ?? { initialRange: 2_000, maxRange: 10_000, backfillBlocks: 1_800 };
  const watched = createWatchedWallets({ chain: name });
  const concurrency = params.concurrency ?? DEFAULT_CONCURRENCY;

  // Grow after `concurrency` full ranges in a row: what a cycle used to be.
  const rangeSize = createRangeSize({ initialRange: logsConfig.initialRange, maxRange: logsConfig.maxRange, growAfter: concurrency });
  let processed = -1n;
  let finalized: bigint | null = null;
  let safe: bigint | null = null;
  let head = -1n;
  let tagsReadAt = 0;
  let lastHeadHash = '';

  const emit = (kind: ChainChange['kind']) => tellChange(params.onChainChange, { chain: name, livemode: true, kind }, log);

  const fetcher = createRangeFetcher({
    chain,
    rpc,
    watched,
    onRangeRefused: (size, fits) => rangeSize.refused(size, fits),
  });
  const getHeader = fetcher.getHeader;

  const chainTips = createChainTips({ chain: name, fetcher, confirmedDepth });
  const getTagNumber = chainTips.tagNumber;

  /** Stored unfinalized blocks and reorg handling (reorg.ts). */
  const branch = createBranchTracker({
    getHeader,
    async readFinalized() {
      finalized = await getTagNumber('finalized', head);
      tagsReadAt = Date.now();
      return finalized;
    },
    confirmedDepth,
    metrics,
    labels,
    logger: log,
  });

  /** A reorg found at `mismatchAt`: the checkpoint goes back to the common ancestor, the next commit rewinds. */
  async function reconcile(mismatchAt: bigint) {
    processed = await branch.reconcile(mismatchAt, processed);
  }

  /**
   * Commits one range (or, without one, only the checkpoint's chain state) in its own transaction.
   * `after` pipelines it behind the previous range's commit, still running (persist.ts): the rows
   * are written at once, the checkpoint only after that commit, from where it left it. The
   * in-memory state (`processed`, the branch mirror) follows each commit in order.
   */
  async function commit(range: FetchedRange | undefined, to: bigint, after?: Promise<unknown>) {
    const pendingRewind = branch.pendingRewind;
    const started = performance.now();
    const chainState = { head, safe, finalized };
    const result = await store.transaction(async (sql) => {
      await params.fence?.(sql);
      return commitRange(sql, {
        chain: name,
        rewind: pendingRewind,
        transfers: range?.transfers ?? [],
        blocks: range?.headers ?? [],
        processedBlock: to,
        ...(after && range ? { after, previousBlock: range.from - 1n } : {}),
        ...chainState,
      });
    });
    branch.committed({ rewind: pendingRewind, headers: range?.headers ?? [], finalized: chainState.finalized });
    log.debug({
      msg: 'Committed range',
      from_block: range?.from.toString(),
      to_block: to.toString(),
      transfers: range?.transfers.length ?? 0,
      headers: range?.headers.length ?? 0,
      fetch_ms: range?.fetchMs,
      commit_ms: Math.round(performance.now() - started),
    });
    const advanced = to - processed;
    processed = to;
    metrics.processedBlock.set(labels, Number(processed));
    if (advanced > 0n) metrics.blocks.inc(labels, Number(advanced));
    if (result.written > 0) metrics.transfers.inc(labels, result.written);
    if (pendingRewind) emit('reorg');
    if (result.written > 0) emit('transfers');
    emit('head');
  }

  /** Reads the head, `safe` and `finalized` (at most every {@link TAG_REFRESH_MS}) and the watched wallets. */
  async function readChain() {
    const tips = await chainTips.read(Date.now() - tagsReadAt >= TAG_REFRESH_MS || safe === null || finalized === null);
    const latest = tips.latest;
    if (tips.tags) {
      ({ safe, finalized } = tips.tags);
      tagsReadAt = Date.now();
    }
    if (latest.hash !== lastHeadHash) {
      metrics.lastHeadAt.set(name, Date.now());
      lastHeadHash = latest.hash;
    }
    head = latest.number;
    metrics.headBlock.set(labels, Number(head));
    metrics.safeBlock.set(labels, Number(safe));
    metrics.finalizedBlock.set(labels, Number(finalized));
    // Deposit addresses whose window ended leave the set only while caught up: a backfill's old
    // blocks may still pay them (depositWatch.ts).
    await watched.refresh(store, { prune: processed >= head - confirmedDepth });
    metrics.watchedDeposits.set(labels, watched.deposits);
    chainReadAt = Date.now();
    return latest;
  }
  let chainReadAt = 0;

  /**
   * One pass: read the head, then bring the checkpoint up to it. Returns true when caught up.
   *
   * Catching up is a pipeline: up to `concurrency` ranges are fetched ahead, and up to
   * {@link COMMITS_IN_FLIGHT} commits run at once, each range's rows written while the range
   * before it commits; checkpoints still commit one range at a time, in order, each with the
   * rows it covers. A new range is planned as soon as one is handed to a commit, so the node is
   * never idle while Postgres writes. The head, tags and watched wallets are re-read between
   * ranges every {@link TAG_REFRESH_MS}, so a long backfill sees new wallets and finality as a
   * cycle of four ranges used to.
   */
  async function cycle(): Promise<boolean> {
    const previousFinalized = finalized;
    const latest = await readChain();

    // A head at or below the checkpoint that replaced a stored block: a reorg that did not lengthen the chain.
    if (latest.number <= processed && branch.replacedBy(latest)) await reconcile(latest.number);
    // A checkpoint the node has finalized past (the ingester was down or behind): the ranges ahead
    // read no headers up to `finalized`, so nothing would link them to the stored block; ask the
    // node whether that block is still canonical. Else a reorg of the last blocks stored before
    // the lag, finalized the other way since, would leave their transfers counted (issue 30).
    else if (head > processed && processed >= 0n && finalized !== null && processed < finalized) {
      const canonical = await getHeader(processed);
      if (canonical && branch.replacedBy(canonical)) await reconcile(processed);
    }
    if (head <= processed) {
      if (branch.pendingRewind) await commit(undefined, processed);
      else if (finalized !== previousFinalized) {
        await commit(undefined, processed);
        emit('finalized');
      }
      return true;
    }

    const fetching: Promise<FetchedRange>[] = [];
    let planned = processed + 1n;
    /** Set while the density probe is in flight: nothing more is planned until it answers. */
    let probing = false;
    const plan = () => {
      while (!probing && fetching.length < concurrency && planned <= head) {
        const from = planned;
        probing = rangeSize.probeFirst(head - from + 1n);
        const size = probing ? PROBE_BLOCKS : rangeSize.current;
        const to = from + size - 1n < head ? from + size - 1n : head;
        const promise = fetcher.fetchRange(from, to, finalized as bigint);
        promise.catch(() => {});
        fetching.push(promise);
        planned = to + 1n;
      }
    };
    /** Commits not yet settled, oldest first; the last one is what the next range commits after. */
    const committing: Promise<void>[] = [];
    const settleAll = () => Promise.allSettled(committing);
    /** The last header handed to a commit: the next range's first header must name it as parent. */
    let lastHeader: BlockHeader | undefined;
    let expected = processed + 1n;
    rangeSize.startCycle();
    try {
      plan();
      while (fetching.length > 0) {
        const range = await fetching.shift()!;
        if (probing) {
          // The probe answered (or was skipped by the bloom filter: nothing to scale by then).
          probing = false;
          rangeSize.probed(range.densestBlockLogs);
        }
        const first = range.headers[0];
        if (first) {
          // Linkage: a first header whose parent is not the block below it is a reorg.
          const linked = lastHeader && lastHeader.number === first.number - 1n ? lastHeader.hash === first.parentHash : branch.continuedBy(first);
          if (!linked) {
            await settleAll();
            await Promise.all(committing);
            await reconcile(first.number - 1n);
            return false;
          }
          for (let i = 1; i < range.headers.length; i++) {
            if (range.headers[i]!.parentHash !== range.headers[i - 1]!.hash) throw new ChainMovedError(`${name}: headers of one range do not link`);
          }
          lastHeader = range.headers.at(-1);
        } else lastHeader = undefined;
        if (range.from !== expected) throw new ChainMovedError(`${name}: ranges out of order`);
        expected = range.to + 1n;
        // A rewind is applied by exactly one commit: nothing overlaps it.
        const previous = branch.pendingRewind ? undefined : committing.at(-1);
        if (branch.pendingRewind) await Promise.all(committing);
        const committed = commit(range, range.to, previous);
        committed.catch(() => {});
        committing.push(committed);
        while (committing.length > COMMITS_IN_FLIGHT || (committing.length > 0 && branch.pendingRewind)) await committing.shift();
        rangeSize.fetched(range.to - range.from + 1n);
        // Plan first: the ranges in flight keep the node busy while the head and tags are read.
        plan();
        if (Date.now() - chainReadAt >= TAG_REFRESH_MS) {
          await readChain();
          plan();
        }
      }
      while (committing.length > 0) await committing.shift();
    } finally {
      // On any failure, wait for the commits already sent before the cycle is retried: the next
      // one resumes from whatever of them committed (`processed` follows each in order).
      await settleAll();
    }
    if (previousFinalized !== finalized) emit('finalized');
    return processed >= head;
  }

  return {
    async run() {
      // The checks, the checkpoint and the head in parallel: behind a provider's latency each is a
      // round trip, and nothing is written before every check passed.
      const settled = await Promise.allSettled([checkChain({ rpc, chain, logger: log }), loadState(store, name), getHeader('latest')]);
      // A failed check is the reason to give, whatever else failed with it.
      for (const result of settled) if (result.status === 'rejected') throw result.reason;
      const state = (settled[1] as PromiseFulfilledResult<Awaited<ReturnType<typeof loadState>>>).value;
      const first = (settled[2] as PromiseFulfilledResult<BlockHeader | null>).value;
      branch.load(state.blocks, state.finalizedBlock);
      finalized = state.finalizedBlock;
      if (state.processedBlock === null) {
        const latest = first;
        if (!latest) throw new RetryableError(`${name}: the node returned no latest block`);
        const back = BigInt(params.backfillBlocks ?? logsConfig.backfillBlocks);
        processed = latest.number - back < -1n ? -1n : latest.number - back;
        log.info({ msg: 'First start: backfilling from below the head', from_block: (processed + 1n).toString(), head_block: latest.number.toString() });
      } else {
        processed = state.processedBlock;
        log.info({ msg: 'Resuming from checkpoint', processed_block: processed.toString(), stored_blocks: branch.size });
      }
      metrics.processedBlock.set(labels, Number(processed));
      const heads = createHeadSignal({ chain: name, wsUrls: params.wsUrls, logger: log, signal });
      const pollMs = params.pollMs ?? pollInterval(chain.blockTimeMs);
      const failures = createBackoff(ERROR_BACKOFF);
      try {
        while (!signal.aborted) {
          let caughtUp = false;
          try {
            caughtUp = await cycle();
            failures.succeeded();
          } catch (error) {
            if (signal.aborted) break;
            // Leadership lost (fence) and certain failures end the run; RPC and database hiccups retry.
            if (error instanceof LeadershipLostError || error instanceof NonRetryableError) throw error;
            const wait = failures.failed();
            const level = error instanceof ChainMovedError ? 'info' : 'warn';
            log[level]({ msg: 'Ingest cycle failed; retrying', consecutive_failures: failures.failures, err: error });
            // The chain moving or a range being re-planned retries at once, a few times; anything
            // that keeps failing backs off (a provider refusing even one block must not spin).
            const immediate = error instanceof ChainMovedError && failures.failures <= 5;
            await sleep(immediate ? 0 : wait, signal);
            continue;
          }
          // With a live newHeads subscription the timer is only a safety net.
          if (caughtUp) await heads.wait(heads.subscribed ? Math.max(pollMs * 4, 2_000) : pollMs);
        }
      } finally {
        heads.close();
      }
    },
  };
}
