-- Issue 28 goal 5: the attempt log keeps no foreign keys. Each key was checked at every attempt's
-- insert by a `SELECT ... FOR KEY SHARE` of the row it names (its delivery, event and endpoint),
-- and each check locks that row, a write of its own: a tenth of Postgres's time per delivered
-- webhook in a profile of bench/webhooks.ts (perf, RI_FKey_check). The log is append-only and
-- has one writer: an attempt is inserted only in the statement or transaction that updates the
-- delivery it names (src/delivery/record.ts), which carries that event and endpoint, and no
-- delivery, event or endpoint row is ever deleted (endpoints are deleted softly, `deleted_at`).
-- The keys on webhook_deliveries stay: its rows have several writers (dispatch, redeliver, replay).
ALTER TABLE webhook_attempts
  DROP CONSTRAINT webhook_attempts_delivery_id_fkey,
  DROP CONSTRAINT webhook_attempts_event_id_fkey,
  DROP CONSTRAINT webhook_attempts_endpoint_id_fkey;
