import { describe, expect, test } from 'vitest';
import { useTestDatabase } from '../../helpers/db.ts';
import { commitRange } from '../../../src/ingest/evm/persist.ts';

const db = useTestDatabase('evm_reinclusion');
const WALLET = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
const TX = `0x${'ab'.repeat(32)}`;
const USDC = '0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359';
const log = (logIndex: number, block: bigint, amount: bigint, blockHash: string) => ({
  txHash: TX,
  logIndex,
  blockNumber: block,
  blockHash,
  blockTime: null,
  token: USDC,
  from: WALLET,
  to: WALLET,
  amount,
});

describe('a transaction re-included after a reorg at another log position', () => {
  test('counts each log once with its real amount, and its changed rows are matched afresh', async () => {
    // Block 100: one transaction pays 10 (log 5) and 20 (log 6) into a watched wallet.
    await db.store.transaction((sql) =>
      commitRange(sql, {
        chain: 'polygon',
        transfers: [log(5, 100n, 10n, '0x01'), log(6, 100n, 20n, '0x01')],
        blocks: [],
        processedBlock: 100n,
        head: 100n,
        safe: null,
        finalized: null,
      }),
    );
    // Matching decides both (out of its queue, migration 026).
    await db.store.query(`DELETE FROM transfers_undecided WHERE transfer_id IN (SELECT id FROM transfers WHERE tx_hash = $1)`, [TX]);
    // A reorg back to 99; the same transaction lands in block 101 one log later (6 and 7).
    await db.store.transaction((sql) =>
      commitRange(sql, {
        chain: 'polygon',
        rewind: { to: 99n, depth: 1, beyondRule: null },
        transfers: [log(6, 101n, 10n, '0x02'), log(7, 101n, 20n, '0x02')],
        blocks: [],
        processedBlock: 101n,
        head: 101n,
        safe: null,
        finalized: null,
      }),
    );
    const { rows } = await db.store.query<{ log_index: number; amount: string; status: string; block_number: bigint; checked: boolean }>(
      `SELECT log_index, amount::text, status, block_number, NOT EXISTS (SELECT 1 FROM transfers_undecided q WHERE q.transfer_id = t.id) AS checked
         FROM transfers t WHERE tx_hash = $1 ORDER BY log_index`,
      [TX],
    );
    expect(rows).toEqual([
      { log_index: 5, amount: '10', status: 'removed', block_number: 100n, checked: true },
      { log_index: 6, amount: '10', status: 'observed', block_number: 101n, checked: false },
      { log_index: 7, amount: '20', status: 'observed', block_number: 101n, checked: false },
    ]);
    const { rows: total } = await db.store.query<{ sum: string }>(`SELECT sum(amount)::text AS sum FROM transfers WHERE tx_hash = $1 AND status = 'observed'`, [
      TX,
    ]);
    expect(total[0]!.sum).toBe('30');
  });

  test('re-included with the same contents in another block: a decided transfer stays decided, an undecided one waits at its new block', async () => {
    const tx = `0x${'cd'.repeat(32)}`;
    const at = (logIndex: number, block: bigint, blockHash: string) => ({ ...log(logIndex, block, 5n, blockHash), txHash: tx });
    await db.store.transaction((sql) =>
      commitRange(sql, {
        chain: 'polygon',
        transfers: [at(1, 200n, '0x11'), at(2, 200n, '0x11')],
        blocks: [],
        processedBlock: 200n,
        head: 200n,
        safe: null,
        finalized: null,
      }),
    );
    // Matching decided log 1 (unmatched); log 2 is still waiting.
    await db.store.query(`DELETE FROM transfers_undecided WHERE transfer_id IN (SELECT id FROM transfers WHERE tx_hash = $1 AND log_index = 1)`, [tx]);
    await db.store.transaction((sql) =>
      commitRange(sql, {
        chain: 'polygon',
        rewind: { to: 199n, depth: 1, beyondRule: null },
        transfers: [at(1, 201n, '0x12'), at(2, 201n, '0x12')],
        blocks: [],
        processedBlock: 201n,
        head: 201n,
        safe: null,
        finalized: null,
      }),
    );
    const { rows } = await db.store.query(
      `SELECT t.log_index, t.status, t.block_number, q.block_number AS queued_at
         FROM transfers t LEFT JOIN transfers_undecided q ON q.transfer_id = t.id WHERE t.tx_hash = $1 ORDER BY t.log_index`,
      [tx],
    );
    expect(rows).toEqual([
      { log_index: 1, status: 'observed', block_number: 201n, queued_at: null },
      { log_index: 2, status: 'observed', block_number: 201n, queued_at: 201n },
    ]);
  });
});
