-- 017: the merchant dashboard's people (issue 15): users who sign in with a password (and
-- optionally a TOTP code), the single-use links that let them set it, their browser sessions,
-- the Postgres-backed sign-in throttle (so it holds across every process of the api role) and
-- the audit log of sensitive actions. Secrets are stored as hashes (sign-in link and session
-- tokens: 256-bit random, so SHA-256 is enough; passwords: scrypt) or sealed with the daemon's
-- key (TOTP secrets, which must be read back to check a code), never in clear.

-- An owner may require two-factor sign-in for every dashboard user of the merchant.
ALTER TABLE merchants ADD COLUMN dashboard_require_totp boolean NOT NULL DEFAULT false;

CREATE TABLE dashboard_users (
  id text PRIMARY KEY,
  merchant_id text NOT NULL REFERENCES merchants (id),
  -- Stored as typed; unique across the gateway case-insensitively (sign-in asks for an email,
  -- not a merchant), see the unique index below.
  email text NOT NULL CHECK (length(email) BETWEEN 3 AND 254),
  role text NOT NULL CHECK (role IN ('owner', 'developer', 'viewer')),
  -- `scrypt$N$r$p$salt$hash`; null until the user sets a password from a sign-in link.
  password_hash text,
  password_changed_at timestamptz,
  -- TOTP secret (base32), sealed with the daemon's key; the time step last accepted, so a code
  -- cannot be replayed within its window.
  totp_secret_sealed text,
  totp_enabled_at timestamptz,
  totp_last_step bigint,
  -- Who invited the user: a user id, or null for the operator (CLI).
  invited_by text,
  disabled_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  CHECK ((totp_enabled_at IS NULL) OR (totp_secret_sealed IS NOT NULL))
);
CREATE UNIQUE INDEX dashboard_users_email ON dashboard_users (lower(email));
CREATE INDEX dashboard_users_merchant ON dashboard_users (merchant_id, created_at);

-- Single-use links to set a password (an invitation, or a new link an owner hands out).
CREATE TABLE dashboard_sign_in_links (
  token_hash text PRIMARY KEY,
  user_id text NOT NULL REFERENCES dashboard_users (id),
  expires_at timestamptz NOT NULL,
  used_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX dashboard_sign_in_links_user ON dashboard_sign_in_links (user_id);

-- One row per signed-in browser. The cookie carries a random token; only its hash is stored.
CREATE TABLE dashboard_sessions (
  id text PRIMARY KEY,
  token_hash text NOT NULL UNIQUE,
  user_id text NOT NULL REFERENCES dashboard_users (id),
  -- Sent back in every form (and htmx header) and compared with this: CSRF protection.
  csrf_token text NOT NULL,
  -- The Stripe-style test-mode toggle: false shows sandbox data, true live data.
  livemode boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now(),
  -- Idle expiry counts from here (written at most once a minute per session).
  last_seen_at timestamptz NOT NULL DEFAULT now(),
  -- Absolute expiry, whatever the activity.
  expires_at timestamptz NOT NULL,
  -- When the password was last entered in this session: money-routing actions want it recent.
  reauth_at timestamptz NOT NULL DEFAULT now(),
  ip text,
  user_agent text,
  revoked_at timestamptz
);
CREATE INDEX dashboard_sessions_user ON dashboard_sessions (user_id);

-- Failed sign-ins per bucket (`account:<email>` or `ip:<address>`) in the current window.
CREATE TABLE dashboard_sign_in_failures (
  bucket text PRIMARY KEY,
  failures integer NOT NULL,
  window_started_at timestamptz NOT NULL
);

-- Sensitive actions, per merchant: who (user and email at the time, or the operator), what,
-- on what, from where, when.
CREATE TABLE audit_log (
  id bigserial PRIMARY KEY,
  merchant_id text NOT NULL REFERENCES merchants (id),
  user_id text,
  actor text NOT NULL,
  action text NOT NULL,
  target text,
  livemode boolean,
  ip text,
  at timestamptz NOT NULL DEFAULT now(),
  details jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_log_merchant_at ON audit_log (merchant_id, at DESC, id DESC);
