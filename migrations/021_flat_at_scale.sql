-- 021: what keeps the hot paths flat with a large history (issue 16, goal 9; bench/scale.ts,
-- docs/benchmarks.md#scale).

-- The engine's pass used to re-read every settled, expired and failed session and sum its
-- transfers, to find the few whose transfers changed (a late payment, a manual attribution, a
-- reorg): 0.2 s at 10,000 sessions, growing with the history. Now whatever changes a transfer of
-- a session at rest marks it, in the same transaction, and the engine reads only the marked ones
-- and clears the mark when it evaluates them (src/engine/evaluate.ts). Adding a column with a
-- constant default rewrites nothing.
ALTER TABLE payment_sessions ADD COLUMN transfers_changed boolean NOT NULL DEFAULT false;

CREATE FUNCTION payment_sessions_mark_transfers_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- OLD is NULL on INSERT. Sessions in flight are evaluated anyway: only those at rest are marked.
  UPDATE payment_sessions SET transfers_changed = true
   WHERE id IN (NEW.session_id, OLD.session_id)
     AND status IN ('expired', 'failed', 'settled') AND NOT transfers_changed;
  RETURN NULL;
END
$$;

-- Ingest inserts transfers unmatched (session_id NULL): the WHEN clauses keep the trigger off the
-- ingest path; it fires for a match, an attribution, a removal or re-inclusion of a matched one.
CREATE TRIGGER transfers_mark_session_inserted AFTER INSERT ON transfers
  FOR EACH ROW WHEN (NEW.session_id IS NOT NULL) EXECUTE FUNCTION payment_sessions_mark_transfers_changed();
CREATE TRIGGER transfers_mark_session_updated AFTER UPDATE OF session_id, status, amount ON transfers
  FOR EACH ROW WHEN (OLD.session_id IS DISTINCT FROM NEW.session_id
    OR (NEW.session_id IS NOT NULL AND (OLD.status IS DISTINCT FROM NEW.status OR OLD.amount IS DISTINCT FROM NEW.amount)))
  EXECUTE FUNCTION payment_sessions_mark_transfers_changed();

-- Sessions at rest whose counted total differs from what the engine stored when this migration
-- runs: the rule the engine applied before, once.
UPDATE payment_sessions s SET transfers_changed = true
 WHERE s.status IN ('expired', 'failed', 'settled')
   AND EXISTS (
     SELECT 1 FROM (SELECT coalesce(sum(t.amount), 0) AS total FROM transfers t WHERE t.session_id = s.id AND t.status = 'observed') counted
      WHERE counted.total <> s.amount_received OR (s.status = 'settled' AND counted.total > s.reported_received AND counted.total > s.amount_due));

-- The engine's candidates, one partial index per arm: sessions in flight, and marked sessions at rest.
CREATE INDEX payment_sessions_in_flight ON payment_sessions (livemode, chain) WHERE status IN ('created', 'pending', 'confirming', 'confirmed');
CREATE INDEX payment_sessions_transfers_changed ON payment_sessions (livemode, chain) WHERE transfers_changed;

-- The retention pass deletes attempts older than 30 days, 5,000 at a time: without an index each
-- batch scanned the table from its start (over the rows the batches before it left dead).
CREATE INDEX webhook_attempts_started ON webhook_attempts (started_at);

-- GET /payments?status=…: the list index (merchant_id, livemode, created_at DESC, id DESC) finds
-- a status that is rare in a merchant's history (confirming, pending) only by walking the whole
-- history newest first. With the status in the key, the planner reads just that status's rows
-- (and still takes the list index for a status most rows have).
CREATE INDEX payment_sessions_list_status ON payment_sessions (merchant_id, livemode, status, created_at DESC, id DESC);
