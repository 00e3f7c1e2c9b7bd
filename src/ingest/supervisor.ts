import type { Logger } from '../internal/logger.ts';
import { NonRetryableError } from '../internal/errors.ts';
import { createBackoff, type BackoffRule } from '../internal/failureBackoff.ts';
import { sleep } from '../internal/shutdown.ts';
import type { LockPair } from '../store/lockKeys.ts';
import type { IngestMetrics } from './metrics.ts';
import { LeadershipLostError, type LeaderLocks, type Lease } from './leader.ts';

/** Where a chain's ingester stands in this process (read by `Ingest.status()`). */
export type ChainIngestState =
  | { state: 'standby' }
  | { state: 'leader' }
  | { state: 'refused'; error: string }
  | { state: 'retrying'; error: string }
  | { state: 'stopped' };

/** What a chain's ingester gets while it leads. */
export interface LeadContext {
  lease: Lease;
  /** Aborts on stop and when the lease is lost: the ingester must then return. */
  signal: AbortSignal;
  /** For an ingester with its own retry loop: a failed pass it will retry (state `retrying`)… */
  retrying(error: unknown): void;
  /** …and a pass that went well again (state `leader`). */
  healthy(): void;
}

/** One chain's supervision loop (see {@link superviseChain}). */
export interface ChainSupervisor {
  status(): ChainIngestState;
  /** Settles once the loop has stopped (after `signal` aborts) and released the lock. */
  readonly done: Promise<void>;
}

/** A standby tries to take a chain's lock this often: a dead leader is replaced within about this long. */
export const STANDBY_POLL_MS = 2_000;
/**
 * A process that just lost its lock (its database connection broke) is the likeliest to be
 * unhealthy: it sits out this many standby polls, so a healthy standby takes over first.
 */
const LOST_LEASE_SIT_OUT_POLLS = 3;
/**
 * After a refusal (a NonRetryableError: wrong chain id or decimals) the chain stays off this
 * long, its lock released so a correctly configured process can lead, then checks again: an
 * operator's fix to an RPC URL's target takes effect without a restart.
 */
const REFUSED_RETRY_MS = 60_000;
/** After any other failure: 1 s doubling to 30 s. */
const RESTART_BACKOFF: BackoffRule = { initialMs: 1_000, maxMs: 30_000 };

const firstLine = (error: unknown) => String((error as Error)?.message ?? error).split('\n')[0] ?? 'error';

/**
 * Runs one chain's ingester under its leader lock until `signal` aborts, the same way for every
 * chain: stand by until the lock is free, lead (`lead` runs the chain's ingester), then by how
 * the run ended: lease lost (or a {@link LeadershipLostError}): stand by again, no failure; a
 * NonRetryableError: refuse for a minute, lock released; anything else: restart with backoff.
 * The `svc_ingest_leader` gauge is 1 while leading.
 */
export function superviseChain(params: {
  chain: string;
  lockKey: LockPair;
  locks: LeaderLocks;
  logger: Logger;
  metrics: Pick<IngestMetrics, 'leader'>;
  signal: AbortSignal;
  standbyPollMs?: number;
  lead(context: LeadContext): Promise<void>;
}): ChainSupervisor {
  const { chain, locks, signal, metrics } = params;
  const log = params.logger;
  const pollMs = params.standbyPollMs ?? STANDBY_POLL_MS;
  let state: ChainIngestState = { state: 'standby' };

  async function loop() {
    const restarts = createBackoff(RESTART_BACKOFF);
    let standbyLogged = false;
    while (!signal.aborted) {
      let lease: Lease | undefined;
      try {
        lease = await locks.tryAcquire(params.lockKey, chain);
        if (!lease && !standbyLogged) log.info({ msg: 'Another process leads this chain; standing by' });
        standbyLogged = !lease;
      } catch (error) {
        log.warn({ msg: 'Could not reach the database for the leader lock', err: error });
      }
      if (!lease) {
        await sleep(pollMs, signal);
        continue;
      }
      state = { state: 'leader' };
      metrics.leader.set({ chain }, 1);
      log.info({ msg: 'Leading this chain: ingester starting' });
      const runSignal = AbortSignal.any([signal, lease.lost]);
      let next: ChainIngestState = { state: 'standby' };
      let wait = 0;
      const held = lease;
      try {
        await params.lead({
          lease: held,
          signal: runSignal,
          retrying: (error) => (state = { state: 'retrying', error: firstLine(error) }),
          healthy: () => (state = { state: 'leader' }),
        });
        if (held.lost.aborted && !signal.aborted) {
          log.warn({ msg: 'Lost the leader lock; standing by' });
          wait = LOST_LEASE_SIT_OUT_POLLS * pollMs;
        }
      } catch (error) {
        if (signal.aborted) break;
        const message = firstLine(error);
        // A run that failed because its lease was lost (a commit on the dead connection) lost the lease, nothing more.
        if (error instanceof LeadershipLostError || held.lost.aborted) {
          log.warn({ msg: 'Lost the leader lock; standing by', err: error });
          wait = LOST_LEASE_SIT_OUT_POLLS * pollMs;
        } else if (error instanceof NonRetryableError) {
          next = { state: 'refused', error: message };
          log.error({ msg: `The ${chain} ingester refuses to run: ${message}`, err: error });
          wait = REFUSED_RETRY_MS;
        } else {
          wait = restarts.failed();
          next = { state: 'retrying', error: message };
          log.warn({ msg: 'Ingester stopped on an error; restarting', consecutive_failures: restarts.failures, err: error });
        }
      } finally {
        metrics.leader.set({ chain }, 0);
        await held.release();
      }
      state = next;
      await sleep(wait, signal);
    }
  }

  const done = loop()
    .catch((error) => log.error({ msg: 'Ingest loop crashed', err: error }))
    .finally(() => {
      state = { state: 'stopped' };
    });
  return { status: () => ({ ...state }), done };
}
