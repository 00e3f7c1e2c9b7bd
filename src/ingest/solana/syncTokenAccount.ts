import { address, signature as toSignature } from '@solana/kit';
import pLimit from 'p-limit';
import type { Sql, Store } from '../../store/index.ts';
import type { WatchedTokenAccount } from './accounts.ts';
import { parseTokenCredits, type RpcTransaction } from './parse.ts';
import type { SolanaRpcPool } from './rpc.ts';
import { loadKnownSignatures, markFinalized, markRemoved, moveCursor, recordSignatures, type SignatureRecord } from './sql.ts';

/** A signature as getSignaturesForAddress lists it. */
interface ListedSignature {
  signature: string;
  slot: bigint;
  finalized: boolean;
}

/** What one sync of one token account changed. */
export interface SyncResult {
  transfers: number;
  removed: number;
  /** Signatures still waiting for finalization. */
  pending: number;
}

/**
 * Signatures per DB transaction during catch-up: each batch commits its rows and the cursor
 * together, so a kill loses at most one uncommitted batch, which the next run redoes. 50 keeps a
 * transaction short (a few ms) while amortising the commit.
 */
const BATCH = 50;
/** getTransaction calls in flight per token account; public providers throttle beyond ~10/s per connection. */
const FETCH_CONCURRENCY = 8;

/**
 * Brings one token account up to date:
 * 1. lists every signature newer than the cursor at `confirmed` commitment (paged with
 *    `before`, bounded by `until` = cursor and by the account's floor slot);
 * 2. fetches each new one with getTransaction (`maxSupportedTransactionVersion: 0`) and stores it,
 *    oldest first, in batches; its credit (post minus pre balance) becomes a transfer;
 * 3. marks stored signatures finalized once listed as such, and removed when their slot is
 *    finalized (`finalizedSlot`, read before the listing) but they are no longer listed;
 * 4. moves the cursor, in the same transaction, to the newest signature that is finalized and
 *    has every older listed signature stored and finalized.
 */
export async function syncTokenAccount(params: {
  /** Throws inside each transaction when this process no longer holds the ingester lock (see index.ts). */
  fence?: (sql: Sql) => Promise<void>;
  store: Store;
  rpc: SolanaRpcPool;
  account: WatchedTokenAccount;
  finalizedSlot: bigint;
  mints: ReadonlySet<string>;
  tokenPrograms: ReadonlySet<string>;
  pageSize: number;
  signal?: AbortSignal;
}): Promise<SyncResult> {
  const { store, rpc, account } = params;
  const listed = await listSignatures(rpc, account, params.pageSize, params.finalizedSlot);
  // Listed but not finalized although its slot is: it sits on a fork the cluster did not root,
  // and will never be final. It is not stored, and if it was, it is removed below.
  const orphaned = new Set(listed.filter((item) => !item.finalized && item.slot <= params.finalizedSlot).map((item) => item.signature));
  const known = await loadKnownSignatures(store, account.address, listed.map((item) => item.signature));
  const result: SyncResult = { transfers: 0, removed: 0, pending: 0 };

  let prefixFinal = true;
  const limit = pLimit(FETCH_CONCURRENCY);
  for (let start = 0; start < listed.length; start += BATCH) {
    if (params.signal?.aborted) return result;
    const batch = listed.slice(start, start + BATCH);
    const fresh = batch.filter((item) => {
      const stored = known.get(item.signature);
      return !orphaned.has(item.signature) && (!stored || stored.commitment === 'removed');
    });
    const fetched = new Map(
      await Promise.all(
        fresh.map((item) =>
          limit(async () => {
            const transaction = await rpc.call('getTransaction', (client) =>
              client.getTransaction(toSignature(item.signature), { encoding: 'json', commitment: 'confirmed', maxSupportedTransactionVersion: 0 }),
            );
            return [item.signature, transaction as unknown as RpcTransaction | null] as const;
          }),
        ),
      ),
    );
    const records: SignatureRecord[] = [];
    const nowFinal: string[] = [];
    let cursor: ListedSignature | undefined;
    for (const item of batch) {
      if (orphaned.has(item.signature)) continue;
      const stored = known.get(item.signature);
      let storedNow = stored !== undefined && stored.commitment !== 'removed';
      if (!storedNow) {
        const transaction = fetched.get(item.signature);
        if (transaction) {
          const credit = parseTokenCredits(transaction, { mints: params.mints, tokenPrograms: params.tokenPrograms, watched: (tokenAccount) => tokenAccount === account.address })[0];
          const blockTime = transaction.blockTime === null || transaction.blockTime === undefined ? null : new Date(Number(transaction.blockTime) * 1000);
          records.push({ signature: item.signature, slot: item.slot, finalized: item.finalized, failed: transaction.meta?.err != null, blockTime, credit });
          storedNow = true;
        }
      } else if (stored?.commitment === 'confirmed' && item.finalized) {
        nowFinal.push(item.signature);
      }
      if (!item.finalized) result.pending += 1;
      // Not yet served by getTransaction: retried next pass; the cursor must not pass it.
      prefixFinal = prefixFinal && storedNow && item.finalized;
      if (prefixFinal) cursor = item;
    }
    await store.transaction(async (sql) => {
      await params.fence?.(sql);
      result.transfers += await recordSignatures(sql, account.address, account.owner, records);
      await markFinalized(sql, account.address, nowFinal);
      if (cursor) await moveCursor(sql, account.address, cursor);
    });
  }

  const listedSet = new Set(listed.filter((item) => !orphaned.has(item.signature)).map((item) => item.signature));
  const vanished = [...known.values()].filter((row) => row.commitment === 'confirmed' && !listedSet.has(row.signature) && row.slot <= params.finalizedSlot);
  if (vanished.length > 0) {
    result.removed = await store.transaction(async (sql) => {
      await params.fence?.(sql);
      return markRemoved(sql, account.address, vanished);
    });
  }
  result.pending += [...known.values()].filter((row) => row.commitment === 'confirmed' && !listedSet.has(row.signature) && row.slot > params.finalizedSlot).length;
  return result;
}

/** Every signature newer than the cursor (and not older than the floor), oldest first. */
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
      all.push({ signature: item.signature, slot, finalized });
    }
    if (reachedFloor || page.length < pageSize) break;
    before = page[page.length - 1]!.signature;
  }
  return all.reverse();
}
