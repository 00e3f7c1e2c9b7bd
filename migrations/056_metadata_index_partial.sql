-- Issue 28 goal 4: the metadata search index (022) only over sessions that have metadata. A GIN
-- index gives every row an entry, an empty object too (its "empty item"), so each creation paid
-- for a GIN insert it can never be searched by: `$.* ? (@ == v)` matches no value of '{}'. The
-- search (src/payments/sessionSql.ts) says `metadata <> '{}'` as well, which lets the planner
-- use this partial index.
CREATE INDEX payment_sessions_metadata_present ON payment_sessions USING gin (metadata) WHERE metadata <> '{}'::jsonb;
DROP INDEX payment_sessions_metadata;
