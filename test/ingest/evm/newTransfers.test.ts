import { describe, expect, test } from 'vitest';
import { useTestDatabase } from '../../helpers/db.ts';
import { commitRange, upsertTransfers, type RangeCommit } from '../../../src/ingest/evm/persist.ts';
import type { ObservedTransfer } from '../../../src/ingest/evm/transfers.ts';

// A range is first inserted plainly (insertNewTransfers); a transfer already stored makes that
// insert fail on the unique key, and the range is then upserted in the same transaction.
const db = useTestDatabase('evm_new_transfers');
const chain = 'polygon';
const USDC = '0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359';
const WALLET = '0x2222222222222222222222222222222222222222';

function transfer(block: number, amount = BigInt(block + 1)): ObservedTransfer {
  return {
    txHash: `0x${block.toString(16).padStart(64, '0')}`,
    logIndex: 0,
    blockNumber: BigInt(block),
    blockHash: `0x${block.toString(16).padStart(64, 'b')}`,
    blockTime: new Date(),
    token: USDC,
    from: '0x1111111111111111111111111111111111111111',
    to: WALLET,
    amount,
  };
}

const range = (transfers: ObservedTransfer[], processedBlock: number, previousBlock?: number): RangeCommit => ({
  chain,
  transfers,
  blocks: [],
  processedBlock: BigInt(processedBlock),
  ...(previousBlock === undefined ? {} : { previousBlock: BigInt(previousBlock) }),
  head: 1_000n,
  safe: null,
  finalized: null,
});

async function rows(fromBlock: number, toBlock: number) {
  const { rows } = await db.store.query<{ block: string; amount: string; status: string }>(
    `SELECT block_number::text AS block, amount::text, status FROM transfers
      WHERE chain = $1 AND block_number BETWEEN $2 AND $3 ORDER BY block_number, id`,
    [chain, fromBlock, toBlock],
  );
  return rows;
}

/** Blocks of the transfers waiting in matching's queue (migration 026's trigger fills it on insert). */
async function queued(fromBlock: number, toBlock: number) {
  const { rows } = await db.store.query<{ block: string }>(
    `SELECT q.block_number::text AS block FROM transfers_undecided q JOIN transfers t ON t.id = q.transfer_id
      WHERE t.chain = $1 AND t.block_number BETWEEN $2 AND $3 ORDER BY q.block_number`,
    [chain, fromBlock, toBlock],
  );
  return rows.map((row) => row.block);
}

async function checkpoint() {
  const { rows } = await db.store.query<{ processed: string }>('SELECT processed_block::text AS processed FROM chain_heads WHERE livemode AND chain = $1', [
    chain,
  ]);
  return rows[0]?.processed;
}

describe('a range commit writes each transfer once, new or already stored', () => {
  test('new transfers are inserted and counted as written', async () => {
    const result = await db.store.transaction((sql) => commitRange(sql, range([transfer(10), transfer(11), transfer(12)], 12)));
    expect(result).toEqual({ written: 3, removed: 0 });
    expect(await rows(10, 12)).toEqual([
      { block: '10', amount: '11', status: 'observed' },
      { block: '11', amount: '12', status: 'observed' },
      { block: '12', amount: '13', status: 'observed' },
    ]);
    // Copied rows fire the statement trigger too: each waits for matching once.
    expect(await queued(10, 12)).toEqual(['10', '11', '12']);
  });

  test('a transfer a lookup stored before the backfill reaches its block stays once; the others of the range are inserted', async () => {
    await db.store.transaction((sql) => upsertTransfers(sql, chain, [transfer(21)]));
    const result = await db.store.transaction((sql) => commitRange(sql, range([transfer(20), transfer(21), transfer(22)], 22, 12)));
    expect(result).toEqual({ written: 2, removed: 0 });
    expect(await rows(20, 22)).toEqual([
      { block: '20', amount: '21', status: 'observed' },
      { block: '21', amount: '22', status: 'observed' },
      { block: '22', amount: '23', status: 'observed' },
    ]);
    expect(await checkpoint()).toBe('22');
    expect(await queued(20, 22)).toEqual(['20', '21', '22']);
  });

  test('a stored transfer marked removed is observed again when a range brings it back', async () => {
    await db.store.transaction((sql) => commitRange(sql, range([transfer(30)], 30, 22)));
    await db.store.query(`UPDATE transfers SET status = 'removed', removed_at = now() WHERE chain = $1 AND block_number = 30`, [chain]);
    const result = await db.store.transaction((sql) => commitRange(sql, range([transfer(30), transfer(31)], 31, 30)));
    expect(result).toEqual({ written: 2, removed: 0 });
    expect(await rows(30, 31)).toEqual([
      { block: '30', amount: '31', status: 'observed' },
      { block: '31', amount: '32', status: 'observed' },
    ]);
  });

  test('any other failure is not retried as an upsert: the range fails and writes nothing', async () => {
    // An amount of 0 breaks the table's CHECK (amount > 0).
    const failing = db.store.transaction((sql) => commitRange(sql, range([transfer(40), transfer(41, 0n)], 41, 31)));
    await expect(failing).rejects.toThrow(/transfers_amount_check/);
    expect(await rows(40, 41)).toEqual([]);
    expect(await queued(40, 41)).toEqual([]);
    expect(await checkpoint()).toBe('31');
  });
});
