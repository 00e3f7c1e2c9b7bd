-- How many signatures each logged attempt carried in X-Service-Signature (issue 15: the
-- dashboard and GET /events/{id}/attempts say which signatures were sent): 1 with the target's
-- current secret, 2 during a rotation's overlap (the new secret's first, then the replaced one's).
-- The values themselves are never stored (docs/security.md). NULL for attempts logged before.
ALTER TABLE webhook_attempts ADD COLUMN signatures_sent smallint CHECK (signatures_sent BETWEEN 1 AND 2);
