import { address, signature as toSignature } from '@solana/kit';
import type { Sql, Store } from '../../store/index.ts';
import type { WatchedTokenAccount } from './accounts.ts';
import { parseTokenCredits, type RpcTransaction } from './parse.ts';
import type { SolanaRpcPool } from './rpc.ts';
import { loadKnownSignatures, markFinalized, markRemoved, moveCursor, moveSlots, recordSignatures, type SignatureRecord, type StoredSignature } from './sql.ts';

/** A signature as getSignaturesForAddress lists it. */
interface ListedSignature {
  signature: string;
  slot: bigint;
  finalized: boolean;
  blockTime: Date | null;
}

/** What one sync of one token account changed. */
export interface SyncResult {
  transfers: number;
  removed: number;
  /** Signatures still waiting for finalization. */
  pending: number;
  /**
   * The lowest slot of a stored signature whose fate is not decided yet although its slot is at
   * or below `finalizedSlot` (the RPC answers disagree): the finalized slot given to the engine
   * must stay below it until it is decided (rule 4).
   */
  undecidedSlot: bigint | null;
  /**
   * Listed signatures not stored yet: getTransaction did not serve them (the node had not indexed
   * the transaction yet) or they are undecided. The caller checks the account again soon.
   */
  unstored: number;
  /** Signatures stored (new or restored) by this sync, with or without a credit. */
  recorded: number;
}

/**
 * Signatures per DB transaction during catch-up: each batch commits its rows and the cursor
 * together, so a kill loses at most one uncommitted batch, which the next run redoes. 50 keeps a
 * transaction short (a few ms) while amortising the commit.
 */
const BATCH = 50;
/**
 * Batches whose transactions are being fetched ahead of the one being committed, per token
 * account: each is one JSON-RPC batch of up to {@link BATCH} getTransaction calls, so at most
 * 4 × 50 transactions are in flight per account; a provider that throttles answers 429 and the
 * pool spaces its requests.
 */
const FETCH_AHEAD = 4;
/** getSignatureStatuses takes at most 256 signatures per call. */
const STATUS_BATCH = 256;
/**
 * How long a signature may stay listed as only `confirmed` at a slot the cluster finalized before
 * it counts as on an unrooted fork. Behind a load balancer or a failover the node that answers
 * getSlot(finalized) and the one that lists can be a few slots (a few seconds) apart, so one such
 * answer alone proves nothing.
 */
export const ORPHAN_GRACE_MS = 8_000;

/**
 * Brings one token account up to date:
 * 1. lists every signature newer than the cursor at `confirmed` commitment (paged with
 *    `before`, bounded by `until` = cursor and by the account's floor slot);
 * 2. fetches each new one with getTransaction (`maxSupportedTransactionVersion: 0`) and stores it,
 *    oldest first, in batches; its credit (post minus pre balance) becomes a transfer; a stored
 *    one listed at another slot (re-included in another fork) moves to that slot;
 * 3. marks stored signatures finalized once listed as such. A signature whose slot is finalized
 *    (`finalizedSlot`, read before the listing, maybe from another node) but that is not listed as
 *    finalized is *undecided*: it is not stored, it holds the cursor back, and it is removed only on
 *    positive evidence: no longer listed and unknown to getSignatureStatuses (searchTransactionHistory),
 *    or still only confirmed after {@link ORPHAN_GRACE_MS};
 * 4. moves the cursor, in the same transaction, to the newest signature that is finalized and
 *    has every older listed signature stored and finalized.
 */
export async function syncTokenAccount(params: {
  /** Throws a LeadershipLostError inside each transaction when this process no longer holds the ingester lock (the lease fence, ../leader.ts). */
  fence?: (sql: Sql) => Promise<void>;
  store: Store;
  rpc: SolanaRpcPool;
  account: WatchedTokenAccount;
  finalizedSlot: bigint;
  mints: ReadonlySet<string>;
  tokenPrograms: ReadonlySet<string>;
  pageSize: number;
  signal?: AbortSignal;
  /**
   * When each undecided signature of this account was first seen undecided (kept by the caller
   * across passes; updated here). Without it nothing is ever removed on the grace rule.
   */
  undecidedSince?: Map<string, number>;
  orphanGraceMs?: number;
  now?: () => number;
}): Promise<SyncResult> {
  const { store, rpc, account } = params;
  const now = params.now ?? Date.now;
  const graceMs = params.orphanGraceMs ?? ORPHAN_GRACE_MS;
  const undecidedSince = params.undecidedSince ?? new Map<string, number>();
  const listed = await listSignatures(rpc, account, params.pageSize, params.finalizedSlot);
  const known = await loadKnownSignatures(
    store,
    account.address,
    listed.map((item) => item.signature),
  );
  const listedBySignature = new Map(listed.map((item) => [item.signature, item]));
  const result: SyncResult = { transfers: 0, removed: 0, pending: 0, undecidedSlot: null, unstored: 0, recorded: 0 };

  // Suspects: listed as only confirmed although their slot is finalized, or stored as confirmed,
  // finalized by slot and no longer listed. Ask getSignatureStatuses about them (history too).
  const suspects = [
    ...listed
      .filter((item) => !item.finalized && item.slot <= params.finalizedSlot && known.get(item.signature)?.commitment !== 'finalized')
      .map((item) => item.signature),
    ...[...known.values()]
      .filter((row) => row.commitment === 'confirmed' && !listedBySignature.has(row.signature) && row.slot <= params.finalizedSlot)
      .map((row) => row.signature),
  ];
  const statuses = await signatureStatuses(rpc, suspects);
  /** Suspects still undecided (hold the cursor, not stored, keep the finalized slot below them). */
  const undecided = new Set<string>();
  /** Stored suspects decided gone. */
  const gone: StoredSignature[] = [];
  /** Stored signatures to move to another slot. */
  const moved: { signature: string; accountIndex: number | null; slot: bigint; blockTime: Date | null }[] = [];
  const seenUndecided = new Map<string, number>();
  for (const signature of suspects) {
    const status = statuses.get(signature);
    const item = listedBySignature.get(signature);
    const stored = known.get(signature);
    const since = undecidedSince.get(signature) ?? now();
    let isGone: boolean;
    if (status?.finalized)
      isGone = false; // the listing node lags: it will list it as finalized
    else if (!item && status === null)
      isGone = true; // not listed and unknown: vanished with its fork
    else isGone = now() - since >= graceMs; // still only confirmed long after its slot was finalized: unrooted fork
    if (isGone) {
      if (stored && stored.commitment === 'confirmed') gone.push(stored);
      continue;
    }
    // Known elsewhere at another slot than stored (re-included in another fork): follow it.
    if (stored && stored.commitment === 'confirmed' && status && status.slot !== stored.slot && !item) {
      moved.push({ signature, accountIndex: stored.accountIndex, slot: status.slot, blockTime: null });
      stored.slot = status.slot;
      if (status.slot > params.finalizedSlot) continue;
    }
    undecided.add(signature);
    seenUndecided.set(signature, since);
    if (stored && stored.commitment === 'confirmed' && (result.undecidedSlot === null || stored.slot < result.undecidedSlot))
      result.undecidedSlot = stored.slot;
  }
  undecidedSince.clear();
  for (const [signature, since] of seenUndecided) undecidedSince.set(signature, since);
  const goneSet = new Set(gone.map((row) => row.signature));

  let prefixFinal = true;
  /** Whether a listed signature needs its transaction fetched (new here, or restored after removal). */
  const isFresh = (item: ListedSignature) => {
    const stored = known.get(item.signature);
    return (
      !undecided.has(item.signature) &&
      !goneSet.has(item.signature) &&
      (!stored || stored.commitment === 'removed') &&
      !(item.slot <= params.finalizedSlot && !item.finalized)
    );
  };
  /** One JSON-RPC batch of getTransaction per commit batch; the decisions above do not change while fetching. */
  const fetchBatch = async (batch: ListedSignature[]) => {
    const fresh = batch.filter(isFresh);
    const answers = await rpc.batch<RpcTransaction | null>(
      'getTransaction',
      fresh.map((item) => [item.signature, { encoding: 'json', commitment: 'confirmed', maxSupportedTransactionVersion: 0 }]),
    );
    return new Map(fresh.map((item, index) => [item.signature, answers[index] ?? null]));
  };
  const batches: ListedSignature[][] = [];
  for (let start = 0; start < listed.length; start += BATCH) batches.push(listed.slice(start, start + BATCH));
  /** Fetches running ahead of the commits, oldest first (at most FETCH_AHEAD). */
  const ahead: Promise<Map<string, RpcTransaction | null>>[] = [];
  let nextToFetch = 0;
  const fetchAhead = () => {
    while (ahead.length < FETCH_AHEAD && nextToFetch < batches.length) {
      const fetching = fetchBatch(batches[nextToFetch++]!);
      fetching.catch(() => {});
      ahead.push(fetching);
    }
  };
  for (const batch of batches) {
    if (params.signal?.aborted) return result;
    fetchAhead();
    const fetched = await ahead.shift()!;
    fetchAhead();
    const records: SignatureRecord[] = [];
    const nowFinal: string[] = [];
    let cursor: ListedSignature | undefined;
    for (const item of batch) {
      if (
        undecided.has(item.signature) ||
        goneSet.has(item.signature) ||
        (item.slot <= params.finalizedSlot && !item.finalized && !known.has(item.signature))
      ) {
        // Not decided (or on an unrooted fork, never stored): the cursor must never pass it.
        prefixFinal = false;
        if (!known.has(item.signature)) result.unstored += 1;
        continue;
      }
      const stored = known.get(item.signature);
      let storedNow = stored !== undefined && stored.commitment !== 'removed';
      if (!storedNow) {
        const transaction = fetched.get(item.signature);
        if (transaction) {
          const credit = parseTokenCredits(transaction, {
            mints: params.mints,
            tokenPrograms: params.tokenPrograms,
            watched: (tokenAccount) => tokenAccount === account.address,
          })[0];
          const blockTime = transaction.blockTime === null || transaction.blockTime === undefined ? null : new Date(Number(transaction.blockTime) * 1000);
          // One slot for both tables: the transaction's own (getTransaction), as its credit has.
          records.push({
            signature: item.signature,
            slot: BigInt(transaction.slot),
            finalized: item.finalized,
            failed: transaction.meta?.err != null,
            blockTime,
            credit,
          });
          storedNow = true;
        }
      } else if (stored?.commitment === 'confirmed') {
        // Listed at another slot than stored: re-included in another fork before finalization.
        if (stored.slot !== item.slot) moved.push({ signature: item.signature, accountIndex: stored.accountIndex, slot: item.slot, blockTime: item.blockTime });
        if (item.finalized) nowFinal.push(item.signature);
      }
      if (!storedNow) result.unstored += 1;
      if (!item.finalized) result.pending += 1;
      // Not yet served by getTransaction: retried next pass; the cursor must not pass it.
      prefixFinal = prefixFinal && storedNow && item.finalized;
      if (prefixFinal) cursor = item;
    }
    const movedNow = moved.splice(0);
    await store.transaction(async (sql) => {
      await params.fence?.(sql);
      result.transfers += await recordSignatures(sql, account.address, account.owner, records);
      result.recorded += records.length;
      await moveSlots(sql, account.address, movedNow);
      await markFinalized(sql, account.address, nowFinal);
      if (cursor) await moveCursor(sql, account.address, cursor);
    });
  }

  if (gone.length > 0 || moved.length > 0) {
    const movedNow = moved.splice(0);
    result.removed = await store.transaction(async (sql) => {
      await params.fence?.(sql);
      await moveSlots(sql, account.address, movedNow);
      return markRemoved(sql, account.address, gone);
    });
  }
  result.pending += [...known.values()].filter(
    (row) => row.commitment === 'confirmed' && !listedBySignature.has(row.signature) && !goneSet.has(row.signature),
  ).length;
  return result;
}

/** getSignatureStatuses (searchTransactionHistory) of `signatures`: null when the node does not know one. */
async function signatureStatuses(rpc: SolanaRpcPool, signatures: string[]): Promise<Map<string, { slot: bigint; finalized: boolean } | null>> {
  const statuses = new Map<string, { slot: bigint; finalized: boolean } | null>();
  for (let start = 0; start < signatures.length; start += STATUS_BATCH) {
    const chunk = signatures.slice(start, start + STATUS_BATCH);
    const { value } = await rpc.call('getSignatureStatuses', (client) =>
      client.getSignatureStatuses(
        chunk.map((signature) => toSignature(signature)),
        { searchTransactionHistory: true },
      ),
    );
    chunk.forEach((signature, index) => {
      const status = value[index];
      statuses.set(signature, status ? { slot: BigInt(status.slot), finalized: status.confirmationStatus === 'finalized' } : null);
    });
  }
  return statuses;
}

/**
 * Every signature newer than the cursor (and not older than the floor), oldest first. The listing
 * ends on an empty page, the floor or the cursor, never on a short page: providers cap `limit`
 * below what was asked, and some page long-term storage in short pages, so a short page proves
 * nothing, and stopping there would let the cursor pass what lies between it and that page.
 */
async function listSignatures(rpc: SolanaRpcPool, account: WatchedTokenAccount, pageSize: number, finalizedSlot: bigint): Promise<ListedSignature[]> {
  const all: ListedSignature[] = [];
  let before: string | undefined;
  for (;;) {
    const page = await rpc.call('getSignaturesForAddress', (client) =>
      client.getSignaturesForAddress(address(account.address), {
        commitment: 'confirmed',
        limit: pageSize,
        ...(before ? { before: toSignature(before) } : {}),
        ...(account.cursorSignature ? { until: toSignature(account.cursorSignature) } : {}),
      }),
    );
    let reachedFloor = false;
    for (const item of page) {
      const slot = BigInt(item.slot);
      if (slot < account.floorSlot) {
        reachedFloor = true;
        break;
      }
      // Providers serving old history from long-term storage may leave the status out: those are
      // final when their slot is.
      const finalized = item.confirmationStatus ? item.confirmationStatus === 'finalized' : slot <= finalizedSlot;
      all.push({
        signature: item.signature,
        slot,
        finalized,
        blockTime: item.blockTime === null || item.blockTime === undefined ? null : new Date(Number(item.blockTime) * 1000),
      });
    }
    if (reachedFloor || page.length === 0) break;
    before = page[page.length - 1]!.signature;
  }
  return all.reverse();
}
