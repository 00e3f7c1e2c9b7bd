import type { Logger } from '../../internal/logger.ts';
import type { IngestMetrics } from '../metrics.ts';
import type { BlockHeader, RangeCommit } from './persist.ts';

/**
 * What the next commit undoes after a reorg: every transfer above `to` (the common ancestor) is
 * marked removed, the stored blocks above it dropped, and the reorg recorded with its depth and
 * the rule it broke, if any.
 */
export type Rewind = NonNullable<RangeCommit['rewind']>;

/**
 * The ingester's view of the chain above `finalized`: a mirror of `chain_blocks` (number -> hash
 * of every stored unfinalized block, plus the newest one at or below `finalized`, kept so the next
 * block can be linked to it) and the rewind a found reorg still owes the database.
 *
 * The reorg story, start to end:
 * 1. Detection (by the ingester, through {@link replacedBy} and {@link continuedBy}): the node's
 *    head has another hash than the stored block of that number, or a range's first header does
 *    not name the stored block below it as its parent.
 * 2. {@link reconcile}: walk back from there while the stored hash differs from the node's, to
 *    the common ancestor; judge the depth against what the gateway recorded final (below the
 *    highest `finalized` a commit wrote, or below everything stored: rule `finalized`; deeper than the chain's
 *    confirmation depth: rule `confirmed`; both are incidents, logged as errors and counted in
 *    `svc_ingest_deep_reorgs_total`, never silent); forget the orphaned blocks and plan the
 *    rewind. The ingester's checkpoint goes back to the ancestor.
 * 3. The next commit applies the rewind in the same transaction as the first range of the new
 *    branch (persist.ts), so a transfer that merely moved is never seen removed; then
 *    {@link committed} brings the mirror in line with what that commit wrote.
 *
 * The mirror holds exactly what `chain_blocks` holds after each commit: it is loaded from it at
 * start-up and pruned by the same rules the commit applies in SQL.
 */
export interface BranchTracker {
  /** Replaces the mirror with the blocks stored in `chain_blocks` and the finalized block recorded with them (start-up). */
  load(stored: Map<bigint, string>, recordedFinalized?: bigint | null): void;
  /** How many blocks are stored. */
  readonly size: number;
  /** The rewind the next commit must apply, set by {@link reconcile} until {@link committed} sees it applied. */
  readonly pendingRewind: Rewind | undefined;
  /** True when a block of `header`'s number is stored with another hash: the node replaced it. */
  replacedBy(header: Pick<BlockHeader, 'number' | 'hash'>): boolean;
  /** False when the block stored below `header` is not its parent (a reorg); true when it is, or none is stored. */
  continuedBy(header: Pick<BlockHeader, 'number' | 'parentHash'>): boolean;
  /**
   * Handles a reorg found at `mismatchAt` (the highest stored block known or suspected to be
   * orphaned) while the checkpoint is `processed`: finds the common ancestor, reports it (log and
   * metrics), forgets the orphaned blocks and plans (or widens) the pending rewind. Returns the
   * ancestor, where the checkpoint goes back to.
   */
  reconcile(mismatchAt: bigint, processed: bigint): Promise<bigint>;
  /**
   * Mirrors a successful commit: the rewind it applied (if any) drops the blocks above its
   * ancestor and is no longer pending, its headers are added, and blocks at or below `finalized`
   * are dropped except the newest.
   */
  committed(commit: { rewind: Rewind | undefined; headers: readonly BlockHeader[]; finalized: bigint | null }): void;
}

/** What {@link createBranchTracker} needs from its ingester. */
export interface BranchTrackerParams {
  /** The node's header at a number, or null when it has none. */
  getHeader(number: bigint): Promise<BlockHeader | null>;
  /**
   * The node's `finalized` block read now (logged with the reorg). The ingester keeps the value it
   * returns as its own reading.
   */
  readFinalized(): Promise<bigint>;
  /** The chain's `confirmations.confirmed` depth: a deeper reorg is an incident. */
  confirmedDepth: bigint;
  metrics: Pick<IngestMetrics, 'reorgs' | 'reorgDepth' | 'deepReorgs'>;
  labels: { chain: string };
  /** The chain's logger. */
  logger: Logger;
}

/** Creates the (empty) stored-branch mirror and reorg handling of one chain's ingester (see {@link BranchTracker}). */
export function createBranchTracker(params: BranchTrackerParams): BranchTracker {
  const { getHeader, metrics, labels, confirmedDepth } = params;
  const log = params.logger;
  /** Stored unfinalized blocks (number -> hash): a mirror of chain_blocks. */
  let blocks = new Map<bigint, string>();
  /** Set when a reorg was found: the next commit removes everything above `to` and records it. */
  let rewind: Rewind | undefined;
  /**
   * The highest `finalized` block a commit recorded: what the gateway has reported final
   * (`settled`). A reorg below it is the incident; one below only the node's finalized block of
   * now is not, when the ingester lagged behind a chain that reorged and then finalized the new
   * branch (nothing it reported final was on the old one).
   */
  let recorded: bigint | null = null;

  const dropAbove = (number: bigint) => {
    for (const stored of [...blocks.keys()]) if (stored > number) blocks.delete(stored);
  };

  /**
   * Walks back from `from` while stored blocks differ from the node's: returns the common
   * ancestor. Running out of stored blocks means the reorg reaches below the newest block kept at
   * or below `finalized` (`beyondStored`).
   */
  async function findCommonAncestor(from: bigint): Promise<{ ancestor: bigint; beyondStored: boolean }> {
    for (let n = from; ; n--) {
      const stored = blocks.get(n);
      if (stored === undefined) return { ancestor: n, beyondStored: true };
      const canonical = await getHeader(n);
      if (canonical && canonical.hash === stored) return { ancestor: n, beyondStored: false };
    }
  }

  return {
    load(stored, recordedFinalized = null) {
      blocks = stored;
      recorded = recordedFinalized;
    },
    get size() {
      return blocks.size;
    },
    get pendingRewind() {
      return rewind;
    },
    replacedBy(header) {
      const stored = blocks.get(header.number);
      return stored !== undefined && stored !== header.hash;
    },
    continuedBy(header) {
      const parent = blocks.get(header.number - 1n);
      return parent === undefined || parent === header.parentHash;
    },

    async reconcile(mismatchAt, processed) {
      const { ancestor, beyondStored } = await findCommonAncestor(mismatchAt);
      const finalized = await params.readFinalized();
      // The pending rewind already covers an ancestor at or above its own: nothing new to report.
      if (rewind && ancestor >= rewind.to) return ancestor;
      // Counted from the tip the reorg orphaned: while an earlier rewind is still pending the
      // checkpoint already stands at its ancestor, so its depth is added (two quick reorgs in a
      // row are one reorg of the chain as far as anything reported is concerned).
      const pending = rewind;
      const depth = pending ? BigInt(pending.depth) + (pending.to - ancestor) : processed - ancestor;
      const belowFinality = beyondStored || (recorded !== null && ancestor < recorded);
      const fields = {
        reorg_depth: Number(depth),
        common_ancestor_block: ancestor.toString(),
        processed_block: processed.toString(),
        finalized_block: finalized.toString(),
        recorded_finalized_block: recorded?.toString() ?? null,
      };
      let beyondRule: Rewind['beyondRule'] = null;
      if (belowFinality) {
        beyondRule = 'finalized';
        log.error({ msg: 'Reorg reaches below the finalized block: transfers already reported final may be gone', ...fields });
      } else if (depth > confirmedDepth) {
        beyondRule = 'confirmed';
        log.error({ msg: "Reorg deeper than the chain's confirmation depth", confirmation_depth: Number(confirmedDepth), ...fields });
      } else {
        log.warn({ msg: 'Reconciled reorg', ...fields });
      }
      // The incident alert counts once per reorg, and again only if a second walk makes it worse.
      const severity = (rule: Rewind['beyondRule'] | undefined) => (rule === 'finalized' ? 2 : rule === 'confirmed' ? 1 : 0);
      if (beyondRule && severity(beyondRule) > severity(pending?.beyondRule)) metrics.deepReorgs.inc({ ...labels, rule: beyondRule });
      // The orphaned blocks are gone from the chain now; the DB forgets them in the rewind commit.
      dropAbove(ancestor);
      // A second reorg before the rewind commits: one rewind down to the lower ancestor covers
      // both; a higher ancestor is already covered by the pending one.
      rewind = {
        to: ancestor,
        depth: Number(depth),
        beyondRule: severity(beyondRule) >= severity(pending?.beyondRule) ? beyondRule : (pending?.beyondRule ?? null),
      };
      return ancestor;
    },

    committed(commit) {
      if (commit.rewind) {
        // Counted when applied: two quick reorgs merged into one rewind are one reorg of one depth.
        metrics.reorgs.inc(labels);
        metrics.reorgDepth.observe(labels, commit.rewind.depth);
        dropAbove(commit.rewind.to);
        rewind = undefined;
      }
      for (const header of commit.headers) blocks.set(header.number, header.hash);
      // The same pruning as the commit's SQL: the newest block stays, so the next one can be linked to it.
      const { finalized } = commit;
      if (finalized !== null && (recorded === null || finalized > recorded)) recorded = finalized;
      if (finalized !== null && blocks.size > 1) {
        // biome-ignore lint/complexity/useMathMinMax: block numbers are bigints, which Math.max refuses
        const newest = [...blocks.keys()].reduce((a, b) => (a > b ? a : b));
        for (const number of [...blocks.keys()]) if (number <= finalized && number < newest) blocks.delete(number);
      }
    },
  };
}
