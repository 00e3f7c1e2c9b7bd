-- 030: a dashboard user's email is unique per merchant, not across the gateway (issue 24).
-- With one index over every merchant, an owner inviting an address learned whether it was a
-- user of another merchant (the invitation was refused). Now one address may be a user of
-- several merchants, each with its own password, role and second factor; sign-in tells them
-- apart by the password (and asks which merchant when one password opens several), see
-- docs/security.md. Emails compare case-insensitively with Postgres lower(), as before.
DROP INDEX dashboard_users_email;
CREATE UNIQUE INDEX dashboard_users_merchant_email ON dashboard_users (merchant_id, lower(email));
-- Sign-in looks users up by email alone.
CREATE INDEX dashboard_users_email ON dashboard_users (lower(email));
-- The sign-in throttle's buckets are now `user:<id>` for an email that names users, besides
-- `account:<email>` (an email that names none) and `ip:<address>`; old rows expire by themselves.
