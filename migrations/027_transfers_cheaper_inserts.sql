-- 027: fewer and cheaper index insertions per new transfer (issue 16 goal 7, EVM backfill speed).
-- A backfill writes every transfer into each index of the table; measured on 12,000-row ranges
-- (backend CPU, bench/ingestInsert.ts, before 026), the two changes below took the upsert from
-- about 190 to 137 ms.
--
-- 1. `transfers_unmatched` (livemode, chain, to_address, observed_at) WHERE session_id IS NULL
--    indexed every new row (they all arrive unmatched) and no query reads transfers by recipient:
--    matching reads its queue (`transfers_undecided`, 026), the unmatched list reads by id and the
--    merchant's wallets.
-- 2. The unique key leads with the transaction hash: (tx_hash, log_index, livemode, chain) instead
--    of (livemode, chain, tx_hash, log_index). Same columns, so `ON CONFLICT (livemode, chain,
--    tx_hash, log_index)` still infers it and a table partitioned by chain can still keep it.
--    Inserting into the old order compared the variable-length `chain` before reaching the hash
--    on every step down the tree (Postgres then cannot cache the offsets of the columns after it);
--    the new order compares the hash first. Every lookup of this code by hash (claims, checkout
--    proofs, the sandbox, Solana's slot moves, the dashboard's payment search) gives the hash, so
--    the key also serves the search `transfers_tx_hash` of 022 did, and that index goes.
--
-- Cost on a large table: building the new unique index reads the whole table and sorts it
-- (3.2 s per million rows measured on the 2-core machine; see docs/operating.md) while the ALTER TABLE holds an exclusive lock on `transfers`: ingestion,
-- matching and every read of transfers wait for it. No row is rewritten. Run it in a maintenance
-- window on a large installation.
DROP INDEX transfers_unmatched;
DROP INDEX transfers_tx_hash;
ALTER TABLE transfers DROP CONSTRAINT transfers_livemode_chain_tx_hash_log_index_key;
ALTER TABLE transfers ADD CONSTRAINT transfers_tx_hash_log_index_key UNIQUE (tx_hash, log_index, livemode, chain);
