import { expect, test } from 'vitest';
import { ResponseBodyTooLargeError } from 'viem';
import { useTestDatabase } from '../../helpers/db.ts';
import { CheckpointMovedError, commitRange, type RangeCommit } from '../../../src/ingest/evm/persist.ts';
import { fittingRange, rangeForDensity, type ObservedTransfer } from '../../../src/ingest/evm/transfers.ts';
import { RpcRequestRejected } from '../../../src/ingest/evm/rpc.ts';

const db = useTestDatabase('ingest_pipelined');
const chain = 'polygon';

/** One transfer per block of [from, to], with a distinct hash per block. */
function transfersIn(from: number, to: number): ObservedTransfer[] {
  return Array.from({ length: to - from + 1 }, (_, i) => ({
    txHash: `0x${(from + i).toString(16).padStart(64, '0')}`,
    logIndex: 0,
    blockNumber: BigInt(from + i),
    blockHash: `0x${(from + i).toString(16).padStart(64, 'b')}`,
    blockTime: new Date(),
    token: '0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359',
    from: '0x1111111111111111111111111111111111111111',
    to: '0x2222222222222222222222222222222222222222',
    amount: BigInt(from + i + 1),
  }));
}

const range = (from: number, to: number, extra: Partial<RangeCommit> = {}): RangeCommit => ({
  chain,
  transfers: transfersIn(from, to),
  blocks: [],
  processedBlock: BigInt(to),
  head: 1_000n,
  safe: null,
  finalized: null,
  ...extra,
});

async function stored() {
  const { rows } = await db.store.query<{ n: string; processed: string | null }>(
    `SELECT (SELECT count(*) FROM transfers WHERE chain = $1)::text AS n,
            (SELECT processed_block::text FROM chain_heads WHERE livemode AND chain = $1) AS processed`,
    [chain],
  );
  return { transfers: Number(rows[0]!.n), processed: rows[0]!.processed };
}

test('a pipelined range commits after its predecessor, and not at all when the predecessor rolls back', async () => {
  await db.store.transaction((sql) => commitRange(sql, range(0, 9)));

  // Range 10..19 commits after 20..29 has written its rows: the checkpoint still moves in order.
  let releaseFirst!: () => void;
  const firstMayCommit = new Promise<void>((resolve) => (releaseFirst = resolve));
  const first = db.store.transaction(async (sql) => {
    const result = await commitRange(sql, range(10, 19, { previousBlock: 9n }));
    await firstMayCommit;
    return result;
  });
  const second = db.store.transaction((sql) => commitRange(sql, range(20, 29, { after: first, previousBlock: 19n })));
  await new Promise((resolve) => setTimeout(resolve, 100));
  expect(await stored()).toEqual({ transfers: 10, processed: '9' });
  releaseFirst();
  await Promise.all([first, second]);
  expect(await stored()).toEqual({ transfers: 30, processed: '29' });

  // The predecessor fails after writing: neither range's rows nor checkpoint remain, no gap is skipped.
  const failing = db.store.transaction(async (sql) => {
    await commitRange(sql, range(30, 39, { previousBlock: 29n }));
    throw new Error('connection lost before COMMIT');
  });
  const follower = db.store.transaction((sql) => commitRange(sql, range(40, 49, { after: failing, previousBlock: 39n })));
  await expect(failing).rejects.toThrow('connection lost');
  await expect(follower).rejects.toThrow('connection lost');
  expect(await stored()).toEqual({ transfers: 30, processed: '29' });

  // A range that does not start where the checkpoint is (its predecessor never committed) writes nothing.
  await expect(db.store.transaction((sql) => commitRange(sql, range(40, 49, { previousBlock: 39n })))).rejects.toBeInstanceOf(CheckpointMovedError);
  expect(await stored()).toEqual({ transfers: 30, processed: '29' });

  // Resuming from the checkpoint stores the rest exactly once.
  await db.store.transaction((sql) => commitRange(sql, range(30, 49, { previousBlock: 29n })));
  expect(await stored()).toEqual({ transfers: 50, processed: '49' });
});

test('a response refused for its measured size re-plans the range to fit once, not by halving', () => {
  const refused = (size: number) =>
    new RpcRequestRejected('polygon: eth_getLogs rejected', 'range', new ResponseBodyTooLargeError({ maxSize: 10_000_000, size }));
  // 104 blocks answered with 63 MB against a 10 MB limit: about 13 blocks fit; aim at 80 % of that.
  expect(fittingRange(104n, refused(63_000_000))).toBe(13n);
  expect(fittingRange(10n, refused(10_500_000))).toBe(7n);
  // Never below one block, never the refused size itself.
  expect(fittingRange(3n, refused(900_000_000))).toBe(1n);
  expect(fittingRange(2n, refused(10_000_001))).toBe(1n);
  // A refusal that says nothing about size (a provider's message): the caller halves.
  expect(
    fittingRange(104n, new RpcRequestRejected('polygon: eth_getLogs rejected', 'range', new Error('query returned more than 10000 results'))),
  ).toBeUndefined();
});

test('the densest block of a first small range sizes the next ranges to fit the 10 MB answer limit', () => {
  // 1,000 Transfer logs in a block (the ingest bench): about 630 KB of JSON a block, so 11 blocks
  // (at 700 bytes a log and 80 % of the limit) instead of a 2,000-block range refused at 63 MB.
  expect(rangeForDensity(1_000)).toBe(11n);
  expect(rangeForDensity(12_000)).toBe(1n);
  expect(rangeForDensity(1_000_000)).toBe(1n);
  // Sparse: the configured range stays (the caller keeps the smaller of the two).
  expect(rangeForDensity(3)).toBe(3_994n);
  expect(rangeForDensity(0)).toBeUndefined();
});
