-- Issue 28 goal 5: an attempt no longer stores a copy of the request body. Every attempt of a
-- delivery sends the event's body as frozen at dispatch (`events.body`, migration 006), so the
-- copy was the same text written again per attempt (heap and WAL). NULL means that body; rows
-- written before this migration keep theirs. An attempt's event outlives it (the foreign key),
-- so the body stays readable for as long as the attempt is.
ALTER TABLE webhook_attempts ALTER COLUMN request_body DROP NOT NULL;
