import { onchainTable } from 'ponder';

/** One row per Transfer log, keyed like svc gateway's transfers (transaction hash and log index). */
export const transfers = onchainTable('transfers', (t) => ({
  id: t.text().primaryKey(),
  from: t.hex().notNull(),
  to: t.hex().notNull(),
  amount: t.bigint().notNull(),
  blockNumber: t.bigint().notNull(),
  txHash: t.hex().notNull(),
  logIndex: t.integer().notNull(),
}));
