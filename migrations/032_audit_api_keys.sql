-- 032: The audit log records changes made through the API too (issue 24), not only the
-- dashboard's: an entry names the API key that made it (its id; the actor text carries the key's
-- id and hint). null: a dashboard user (user_id) or the operator's CLI made it.
ALTER TABLE audit_log ADD COLUMN api_key_id text;
COMMENT ON COLUMN audit_log.api_key_id IS 'The API key that made the change (api_keys.id); null for dashboard users and the CLI.';
