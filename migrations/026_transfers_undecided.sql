-- 026: the transfers matching has not decided yet, as a queue of their own (issue 16, goal 3;
-- docs/benchmarks.md#engine, docs/payment-lifecycle.md#matching).

-- Matching used to mark every transfer it decided by writing `transfers.match_checked_at`. That
-- column is in the predicate of the partial index `transfers_unchecked`, so each mark was a new
-- row version with entries in five indexes: for the ~90 % of a busy wallet's transfers that pay
-- nothing it was the engine's costliest statement. Now a transfer waits in `transfers_undecided`
-- until matching decides it, and deciding it deletes that row (no index entry written): "decided"
-- is "not in the queue". The queue holds only what is waiting (plus removed transfers no one
-- looked at, as the partial index did), so its reads stay flat however long the history grows.
CREATE TABLE transfers_undecided (
  transfer_id bigint PRIMARY KEY,
  livemode boolean NOT NULL,
  chain text NOT NULL,
  -- The transfer's block and log index (kept equal to the row's by the trigger below): matching
  -- takes the queue in chain order.
  block_number bigint NOT NULL,
  log_index integer NOT NULL
);
CREATE INDEX transfers_undecided_order ON transfers_undecided (livemode, chain, block_number, log_index, transfer_id);

-- Every writer of transfers (both ingesters, the sandbox, tools) queues what it inserts, in the
-- same statement: one set-based insert per statement, not a trigger call per row. A transfer
-- inserted already attributed, or failed on chain, has nothing to decide.
CREATE FUNCTION transfers_queue_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO transfers_undecided (transfer_id, livemode, chain, block_number, log_index)
  SELECT id, livemode, chain, block_number, log_index FROM inserted WHERE session_id IS NULL AND status <> 'failed';
  RETURN NULL;
END
$$;
CREATE TRIGGER transfers_queue_inserted AFTER INSERT ON transfers REFERENCING NEW TABLE AS inserted
  FOR EACH STATEMENT EXECUTE FUNCTION transfers_queue_inserted();

-- A transfer a reorg removed and re-included elsewhere (src/ingest/evm/persist.ts): a new block or
-- log index moves its queue entry; new contents (token, recipient, amount: another log at the same
-- key) with no session left are decided afresh, even if they were decided before. Rare, so per row.
CREATE FUNCTION transfers_queue_moved() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.session_id IS NULL AND NEW.status <> 'failed'
     AND (NEW.token_address, NEW.to_address, NEW.amount) IS DISTINCT FROM (OLD.token_address, OLD.to_address, OLD.amount) THEN
    INSERT INTO transfers_undecided (transfer_id, livemode, chain, block_number, log_index)
    VALUES (NEW.id, NEW.livemode, NEW.chain, NEW.block_number, NEW.log_index)
    ON CONFLICT (transfer_id) DO UPDATE SET block_number = excluded.block_number, log_index = excluded.log_index;
  ELSE
    UPDATE transfers_undecided SET block_number = NEW.block_number, log_index = NEW.log_index WHERE transfer_id = NEW.id;
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER transfers_queue_moved AFTER UPDATE OF block_number, log_index, token_address, to_address, amount ON transfers
  FOR EACH ROW WHEN (
    (OLD.block_number, OLD.log_index, OLD.token_address, OLD.to_address, OLD.amount)
      IS DISTINCT FROM (NEW.block_number, NEW.log_index, NEW.token_address, NEW.to_address, NEW.amount))
  EXECUTE FUNCTION transfers_queue_moved();

-- What was waiting when this migration runs (read through the partial index it then drops).
INSERT INTO transfers_undecided (transfer_id, livemode, chain, block_number, log_index)
SELECT id, livemode, chain, block_number, log_index FROM transfers
 WHERE match_checked_at IS NULL AND session_id IS NULL AND status <> 'failed';

-- Dropping the column drops `transfers_unchecked` with it (metadata only, no rewrite).
ALTER TABLE transfers DROP COLUMN match_checked_at;

-- Statistics now, not at autovacuum's first visit: unanalysed, the planner sizes the queue at a
-- few dozen rows and sorts a chain's whole backlog instead of reading its index in order.
ANALYZE transfers_undecided;
