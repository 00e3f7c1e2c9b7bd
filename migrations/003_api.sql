-- 003: what the merchant API (Interface A and B) needs beyond the core schema: idempotency
-- records and rate-limit counters (kept in Postgres so every API process shares them, DESIGN.md
-- rule 8), per-merchant limit overrides and settings, payment links and refunds.

-- A merchant may opt in to bridged token variants (e.g. USDC.e on polygon); off by default
-- because a bridged token is a different asset with its own risk.
ALTER TABLE merchants ADD COLUMN accept_bridged_tokens boolean NOT NULL DEFAULT false;

-- Operators raise a merchant's rate limits here (NULL keeps the default).
CREATE TABLE merchant_rate_limits (
  merchant_id text PRIMARY KEY REFERENCES merchants (id),
  create_per_minute integer CHECK (create_per_minute > 0),
  read_per_minute integer CHECK (read_per_minute > 0),
  write_per_minute integer CHECK (write_per_minute > 0),
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- Fixed one-minute windows: one row per (bucket, window), incremented with an upsert, so the
-- count holds across processes. Rows older than two windows are deleted as requests pass.
CREATE UNLOGGED TABLE rate_limit_counters (
  bucket text NOT NULL,
  window_start timestamptz NOT NULL,
  count integer NOT NULL,
  PRIMARY KEY (bucket, window_start)
);

-- One row per (API key, Idempotency-Key) of a POST: claimed while the first request runs,
-- then holding its response for replay. Only successful responses are kept.
CREATE TABLE idempotency_keys (
  api_key_id text NOT NULL REFERENCES api_keys (id),
  idempotency_key text NOT NULL CHECK (length(idempotency_key) BETWEEN 1 AND 255),
  -- SHA-256 of method, path (without prefix) and the canonical JSON body.
  request_hash text NOT NULL,
  state text NOT NULL CHECK (state IN ('running', 'done')),
  -- A running claim older than this is abandoned (its process died) and may be taken over.
  locked_until timestamptz NOT NULL,
  response_status integer,
  response_body text,
  response_content_type text,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (api_key_id, idempotency_key)
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);

-- A reusable payment link: its public URL makes a fresh payment session per visitor.
CREATE TABLE payment_links (
  id text PRIMARY KEY,
  merchant_id text NOT NULL REFERENCES merchants (id),
  livemode boolean NOT NULL,
  chain text NOT NULL CHECK (chain IN ('polygon', 'solana', 'base', 'bsc', 'arbitrum', 'optimism')),
  currency text NOT NULL CHECK (currency IN ('USDT', 'USDC')),
  decimals smallint NOT NULL,
  amount numeric(78, 0) NOT NULL CHECK (amount > 0),
  -- NULL: the merchant's verified wallet on the chain at the time of each visit.
  merchant_wallet text,
  metadata jsonb NOT NULL DEFAULT '{}',
  webhook_url text,
  success_url text,
  expires_in integer NOT NULL,
  active boolean NOT NULL DEFAULT true,
  sessions_created integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX payment_links_list ON payment_links (merchant_id, livemode, created_at DESC, id DESC);

-- Sessions made from a link point back to it.
ALTER TABLE payment_sessions ADD COLUMN payment_link_id text REFERENCES payment_links (id);

-- A refund request. The gateway is non-custodial: the merchant sends the refund from its own
-- wallet and then completes the request with the transaction hash (or rejects it).
CREATE TABLE refunds (
  id text PRIMARY KEY,
  merchant_id text NOT NULL REFERENCES merchants (id),
  livemode boolean NOT NULL,
  session_id text NOT NULL REFERENCES payment_sessions (id),
  amount numeric(78, 0) NOT NULL CHECK (amount > 0),
  status text NOT NULL DEFAULT 'requested' CHECK (status IN ('requested', 'completed', 'rejected')),
  -- Where the refund goes (canonical address on the session's chain).
  to_address text NOT NULL,
  reason text,
  metadata jsonb NOT NULL DEFAULT '{}',
  tx_hash text,
  rejection_reason text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  completed_at timestamptz,
  rejected_at timestamptz,
  CHECK ((status = 'completed') = (tx_hash IS NOT NULL))
);
CREATE INDEX refunds_session ON refunds (session_id);
CREATE INDEX refunds_list ON refunds (merchant_id, livemode, created_at DESC, id DESC);
