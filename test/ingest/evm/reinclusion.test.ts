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
    await db.store.query(`UPDATE transfers SET match_checked_at = now() WHERE tx_hash = $1`, [TX]);
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
      `SELECT log_index, amount::text, status, block_number, match_checked_at IS NOT NULL AS checked FROM transfers WHERE tx_hash = $1 ORDER BY log_index`,
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
});
