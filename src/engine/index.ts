import { Counter, Histogram, type Registry } from 'prom-client';
import type { Store } from '../store/index.ts';
import type { Logger } from '../internal/logger.ts';
import { CHAIN_NAMES, type ChainName, type Config } from '../internal/config.ts';
import { loadChains, type ChainConfig } from '../internal/chains.ts';
import { createFailureBackoff } from '../internal/failureBackoff.ts';
import { sleep } from '../internal/shutdown.ts';
import { matchTransfers, type QueuePosition, type RefusedClaim } from './match.ts';
import { evaluateSessions, type Change } from './evaluate.ts';
import { lockChain } from './lock.ts';

export type { Change } from './evaluate.ts';
export { lockChain } from './lock.ts';
export { claimTransaction, normalizeTxHash, type ClaimResult, type ClaimSource } from './claims.ts';
export { attributeTransfer, listSessionTransfers, listUnmatchedTransfers, parseTransferId, transferPublicId, type TransferRow } from './attribute.ts';
export { TRANSITIONS, PAYMENT_STATUSES, type PaymentStatus } from '../payments/stateMachine.ts';

/**
 * Transfers matched per transaction. Bounded so a backfill of tens of thousands of transfers
 * commits in slices (1.4-1.6 s for 5,000 with 3,000 open sessions on one wallet on a machine at
 * load 13) instead of one long transaction holding the chain lock; large because each slice
 * reads its wallets' candidate sessions once (with 500, that read was a backfill's costliest
 * statement: docs/benchmarks.md, "Engine").
 */
const MATCH_BATCH = 5_000;

/**
 * How long a scheduled reconcile may leave evaluation to the next one while the ingester keeps
 * committing (a backfill). Evaluation costs the sessions in flight, not the new transfers: each
 * pass reads, locks and rewrites every confirming session (its confirmations move with the
 * head), so evaluating after every coalesced commit of a backfill spent more time there than in
 * matching (docs/benchmarks.md, "Engine"). A state change then waits at most this long plus a
 * pass; a reconcile with nothing more queued always evaluates.
 */
const MAX_EVALUATION_DEFERRAL_MS = 1_000;

/**
 * Default period of the safety-net pass (expiry, confirmations of chains whose ingester is
 * quiet): 5 s makes an expiry fire at most ~5 s late, at 12 tiny transactions per pass.
 */
const DEFAULT_INTERVAL_MS = 5_000;

/** What one `reconcile` did. */
export interface ReconcileResult {
  matched: number;
  unmatched: number;
  changes: Change[];
}

/** What the ingesters tell the engine after each commit. */
export interface ChainChange {
  chain: ChainName;
  livemode: boolean;
  kind: 'transfers' | 'head' | 'reorg' | 'finalized' | (string & {});
}

export interface Engine {
  /**
   * Matches new transfers, recomputes received totals and confirmations and walks the state
   * machine for one (chain, livemode), in transactions under that chain's advisory lock.
   * Idempotent: a second call with nothing new changes nothing.
   */
  reconcile(params: { chain: ChainName; livemode: boolean }): Promise<ReconcileResult>;
  /** `reconcile` for every chain in both modes: expiry sweeps and the safety net. */
  reconcileAll(): Promise<ReconcileResult>;
  /**
   * The ingesters' callback: schedules a reconcile of that chain without waiting for it. Calls
   * arriving while one runs coalesce into one more run.
   */
  onChainChange(change: ChainChange): void;
  /** Resolves when every reconcile scheduled by `onChainChange` so far has finished. */
  idle(): Promise<void>;
  /** Runs `reconcileAll` every `intervalMs` until `signal` aborts. */
  run(signal: AbortSignal): Promise<void>;
}

const chainKey = (chain: ChainName, livemode: boolean) => `${livemode}:${chain}`;

/** The engine's Prometheus metrics on `registry` (shared by every engine of one process). */
export function createEngineMetrics(registry: Registry) {
  const counter = (name: string, help: string, labelNames: string[]) =>
    (registry.getSingleMetric(name) as Counter<string> | undefined) ?? new Counter({ name, help, labelNames, registers: [registry] });
  return {
    transitions: counter('svc_engine_transitions_total', 'Payment state transitions', ['chain', 'from', 'to']),
    events: counter('svc_engine_events_total', 'Payment events written to the outbox', ['chain', 'type']),
    matched: counter('svc_engine_transfers_matched_total', 'Transfers matched to a session', ['chain']),
    unmatched: counter('svc_engine_transfers_unmatched_total', 'Transfers that matched no session', ['chain']),
    claimsRefused: counter(
      'svc_engine_claims_refused_total',
      "Transfers of a claimed transaction that could not go to the claiming session (another wallet or token, outside its window, or another session's reference or exact amount)",
      ['chain'],
    ),
    incidents: counter(
      'svc_engine_incidents_total',
      'Deep reorgs that took confirmed money away (kind deep_reorg), and completed refunds they left uncovered (kind refund_exceeds_confirmed)',
      ['chain', 'kind'],
    ),
    duration:
      (registry.getSingleMetric('svc_engine_reconcile_seconds') as Histogram<string> | undefined) ??
      new Histogram({ name: 'svc_engine_reconcile_seconds', help: 'Time of one reconcile of one chain', labelNames: ['chain'], registers: [registry] }),
  };
}

/**
 * The matching and confirmation engine: pure rules over rows, in Postgres transactions. Several
 * engines (processes) may share one database: each chain's work is serialised by an advisory
 * lock and every session row is locked before it moves, so no transition happens twice.
 */
export function createEngine(params: {
  store: Store;
  logger: Logger;
  metrics: Registry;
  config?: Pick<Config, 'monitorWindowSeconds'>;
  chains?: Record<ChainName, ChainConfig>;
  intervalMs?: number;
}): Engine {
  const { store } = params;
  const logger = params.logger.child({ stage: 'engine' });
  const chains = params.chains ?? loadChains();
  const metrics = createEngineMetrics(params.metrics);
  const running = new Map<string, Promise<void>>();
  const dirty = new Set<string>();
  /** When each (livemode, chain) was last evaluated (performance.now()), for the deferral above. */
  const lastEvaluated = new Map<string, number>();

  /**
   * `reconcile`; with `deferEvaluation`, only matching when it answers true once matching is done
   * (the scheduler's: another run is already queued, which evaluates, and the last evaluation is
   * recent).
   */
  async function reconcileChain(
    { chain, livemode }: { chain: ChainName; livemode: boolean },
    deferEvaluation?: (key: string) => boolean,
  ): Promise<ReconcileResult> {
    const key = chainKey(chain, livemode);
    const chainConfig = chains[chain];
    const timer = metrics.duration.startTimer({ chain });
    const result: ReconcileResult = { matched: 0, unmatched: 0, changes: [] };
    const refusedClaims: RefusedClaim[] = [];
    // Each batch starts where the committed one before it stopped in the queue: an entry it had
    // to leave there (a transfer a reorg removed) is not read again by this pass.
    let after: QueuePosition | undefined;
    try {
      for (;;) {
        const batch = await store.transaction(async (sql) => {
          await lockChain(sql, { livemode, chain });
          const match = await matchTransfers(sql, { livemode, chain, limit: MATCH_BATCH, after });
          result.matched += match.matched;
          result.unmatched += match.unmatched;
          refusedClaims.push(...match.refusedClaims);
          if (match.seen === MATCH_BATCH) return { done: false, next: match.next };
          if (deferEvaluation?.(key)) return { done: true, next: match.next };
          lastEvaluated.set(key, performance.now());
          const changes = await evaluateSessions(sql, {
            livemode,
            chain: chainConfig,
            onIncident: (kind, sessionId) => {
              metrics.incidents.inc({ chain, kind });
              const msg =
                kind === 'refund_exceeds_confirmed'
                  ? 'Reorg left completed refunds larger than the confirmed money of a session; refunds flagged (refund.flagged)'
                  : 'Reorg took confirmed money away from a session';
              logger.error({ msg, chain, livemode, session_id: sessionId, kind });
            },
          });
          result.changes.push(...changes);
          return { done: true, next: match.next };
        });
        after = batch.next;
        if (batch.done) break;
      }
    } finally {
      timer();
    }
    if (result.matched) metrics.matched.inc({ chain }, result.matched);
    if (result.unmatched) metrics.unmatched.inc({ chain }, result.unmatched);
    for (const refusal of refusedClaims) {
      metrics.claimsRefused.inc({ chain });
      logger.warn({
        msg: 'Claimed transfer not attributed to the claiming session',
        chain,
        livemode,
        tx_hash: refusal.txHash,
        session_id: refusal.sessionId,
        reason: refusal.reason,
      });
    }
    for (const change of result.changes) {
      if (change.from !== change.to) metrics.transitions.inc({ chain, from: change.from, to: change.to });
      for (const type of change.events) metrics.events.inc({ chain, type });
      logger.info({
        msg: 'Payment state changed',
        chain,
        livemode,
        session_id: change.sessionId,
        from: change.from,
        to: change.to,
        cause: change.cause,
        events: change.events,
      });
    }
    return result;
  }

  const reconcile = (params: { chain: ChainName; livemode: boolean }) => reconcileChain(params);

  async function reconcileAll(): Promise<ReconcileResult> {
    const total: ReconcileResult = { matched: 0, unmatched: 0, changes: [] };
    for (const livemode of [false, true]) {
      for (const chain of CHAIN_NAMES) {
        const result = await reconcile({ chain, livemode });
        total.matched += result.matched;
        total.unmatched += result.unmatched;
        total.changes.push(...result.changes);
      }
    }
    return total;
  }

  const deferWhileBusy = (key: string) => dirty.has(key) && performance.now() - (lastEvaluated.get(key) ?? -Infinity) < MAX_EVALUATION_DEFERRAL_MS;

  function schedule(chain: ChainName, livemode: boolean): void {
    const key = chainKey(chain, livemode);
    if (running.has(key)) {
      dirty.add(key);
      return;
    }
    const work = (async () => {
      do {
        dirty.delete(key);
        try {
          await reconcileChain({ chain, livemode }, deferWhileBusy);
        } catch (error) {
          logger.error({ msg: 'Reconcile failed; the periodic pass retries it', chain, livemode, err: error });
        }
      } while (dirty.has(key));
    })().finally(() => running.delete(key));
    running.set(key, work);
  }

  return {
    reconcile,
    reconcileAll,
    onChainChange: (change) => schedule(change.chain, change.livemode),
    async idle() {
      while (running.size > 0) await Promise.all([...running.values()]);
    },
    async run(signal) {
      const interval = params.intervalMs ?? DEFAULT_INTERVAL_MS;
      // The database down fails every pass: back off to a minute and log the outage once.
      const failures = createFailureBackoff({ logger, what: 'Periodic reconcile', initialMs: interval, maxMs: Math.max(interval, 60_000) });
      while (!signal.aborted) {
        let delay = interval;
        try {
          await reconcileAll();
          failures.succeeded();
        } catch (error) {
          delay = failures.failed(error);
        }
        await sleep(delay, signal);
      }
    },
  };
}
