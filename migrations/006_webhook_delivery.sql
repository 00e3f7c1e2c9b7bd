-- 006: webhook delivery (issue 6). Registered endpoints with their own sealed secrets, one
-- delivery row per (event, target) made exactly once from the outbox, and every attempt logged.
-- Retries are rows (`next_attempt_at`), not timers, so a restart loses nothing; several daemons
-- share the work through `FOR UPDATE SKIP LOCKED` and a lease (`locked_until`).

-- Endpoints registered with POST /webhooks. Rows are soft-deleted (`deleted_at`) so the
-- delivery log of a deleted endpoint stays readable.
CREATE TABLE webhook_endpoints (
  id text PRIMARY KEY,
  merchant_id text NOT NULL REFERENCES merchants (id),
  -- Registered with a test key: receives sandbox events only; live key: live events only.
  livemode boolean NOT NULL,
  url text NOT NULL CHECK (length(url) BETWEEN 1 AND 2048),
  description text CHECK (length(description) <= 500),
  -- Event kinds this endpoint receives; '{*}' means every kind.
  enabled_events text[] NOT NULL DEFAULT '{*}' CHECK (cardinality(enabled_events) > 0),
  -- AES-256-GCM sealed signing secret (SecretBox); shown once at creation and on rotation.
  secret_sealed text NOT NULL,
  status text NOT NULL DEFAULT 'enabled' CHECK (status IN ('enabled', 'disabled')),
  disabled_reason text,
  disabled_at timestamptz,
  -- Time of the first failed attempt since the last success; NULL while healthy. Five days of
  -- nothing but failures disables the endpoint.
  failing_since timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  deleted_at timestamptz
);
CREATE INDEX webhook_endpoints_merchant ON webhook_endpoints (merchant_id, livemode, created_at) WHERE deleted_at IS NULL;

-- The dispatcher marks each outbox event once it has made its deliveries, and freezes the body
-- text then: every attempt and every redelivery of the event sends exactly these bytes.
ALTER TABLE events ADD COLUMN dispatched_at timestamptz;
ALTER TABLE events ADD COLUMN body text;
CREATE INDEX events_undispatched ON events (seq) WHERE dispatched_at IS NULL;
CREATE INDEX events_merchant_type ON events (merchant_id, livemode, type, created_at DESC);

-- One delivery of one event to one target: a registered endpoint, or a session's webhookUrl
-- (endpoint_id NULL, signed with the merchant's default secret).
CREATE TABLE webhook_deliveries (
  id text PRIMARY KEY,
  event_id text NOT NULL REFERENCES events (id),
  merchant_id text NOT NULL REFERENCES merchants (id),
  livemode boolean NOT NULL,
  endpoint_id text REFERENCES webhook_endpoints (id),
  url text NOT NULL,
  -- dispatch: made from the outbox (exactly once per target); redeliver / replay: asked for
  -- through the API, any number of times.
  origin text NOT NULL CHECK (origin IN ('dispatch', 'redeliver', 'replay')),
  -- 'endpoint:<id>' or 'session': the key that makes dispatch exactly-once per target.
  target text NOT NULL,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed')),
  attempt_count integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz,
  -- Lease of the worker sending it now; an expired lease means that worker died mid-attempt.
  locked_until timestamptz,
  last_attempt_at timestamptz,
  last_response_status integer,
  last_error text,
  created_at timestamptz NOT NULL DEFAULT now(),
  completed_at timestamptz,
  CHECK ((status = 'pending') = (next_attempt_at IS NOT NULL))
);
CREATE UNIQUE INDEX webhook_deliveries_dispatch_once ON webhook_deliveries (event_id, target) WHERE origin = 'dispatch';
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id, created_at);
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, created_at) WHERE endpoint_id IS NOT NULL;

-- Every attempt, as sent and as answered (a bounded excerpt of the response body).
CREATE TABLE webhook_attempts (
  id text PRIMARY KEY,
  delivery_id text NOT NULL REFERENCES webhook_deliveries (id),
  event_id text NOT NULL REFERENCES events (id),
  endpoint_id text REFERENCES webhook_endpoints (id),
  attempt_number integer NOT NULL,
  url text NOT NULL,
  request_headers jsonb NOT NULL,
  request_body text NOT NULL,
  -- NULL when no response came (network error, timeout, refused address).
  response_status integer,
  response_body_excerpt text,
  error text,
  duration_ms integer NOT NULL,
  succeeded boolean NOT NULL,
  started_at timestamptz NOT NULL,
  UNIQUE (delivery_id, attempt_number)
);
CREATE INDEX webhook_attempts_event ON webhook_attempts (event_id, started_at);

-- Wakes the delivery workers the moment an event or a delivery is committed (NOTIFY is sent
-- at commit, and repeated payloads in one transaction fold into one), so the delay from a state
-- change to its webhook does not wait for a polling interval.
CREATE FUNCTION svc_delivery_wakeup() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('svc_delivery_wakeup', '');
  RETURN NULL;
END;
$$;
CREATE TRIGGER events_delivery_wakeup AFTER INSERT ON events
  FOR EACH STATEMENT EXECUTE FUNCTION svc_delivery_wakeup();
CREATE TRIGGER webhook_deliveries_wakeup AFTER INSERT ON webhook_deliveries
  FOR EACH STATEMENT EXECUTE FUNCTION svc_delivery_wakeup();
