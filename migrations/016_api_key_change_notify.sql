-- 016: Every process of the HTTP layer keeps the API keys it has seen in memory (src/api/auth.ts),
-- so a request does not read api_keys each time. A change that can turn a key away (revocation,
-- new scopes, a new hash, another owner or mode, deletion) notifies them on `svc_api_key_changes`
-- with the key's id, at commit, whoever makes it: the CLI, another process, or an operator in
-- psql. Their cache is also bounded by a short time to live, so a missed notification (a
-- listener reconnecting) costs at most that delay. `last_used_at` writes do not notify.
CREATE FUNCTION notify_api_key_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    PERFORM pg_notify('svc_api_key_changes', OLD.id);
  ELSE
    PERFORM pg_notify('svc_api_key_changes', NEW.id);
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER api_keys_notify_change
  AFTER UPDATE OF revoked_at, scopes, secret_hash, prefix, merchant_id, livemode OR DELETE ON api_keys
  FOR EACH ROW EXECUTE FUNCTION notify_api_key_change();
