-- 005: what the matching and confirmation engine (src/engine) needs beyond 002.

-- Payment tolerance per merchant (BTCPay Server's "consider paid if at most X% is missing"), in
-- basis points of the due amount. 0 (the default) means the full due amount must arrive; the cap
-- of 10% keeps a typo from turning every underpayment into a confirmed payment.
ALTER TABLE merchants ADD COLUMN payment_tolerance_bps integer NOT NULL DEFAULT 0
  CHECK (payment_tolerance_bps BETWEEN 0 AND 1000);

-- The received total the merchant was last told about in a confirmed/overpaid event, so money
-- arriving after confirmation (a duplicate payment) is reported as `payment.overpaid` once.
ALTER TABLE payment_sessions ADD COLUMN reported_received numeric(78, 0) NOT NULL DEFAULT 0;

-- When the engine tried to match this transfer. Each transfer is matched (or left unmatched) once,
-- deterministically, so later sessions cannot steal an old payment and reconcile stays cheap.
ALTER TABLE transfers ADD COLUMN match_checked_at timestamptz;
CREATE INDEX transfers_unchecked ON transfers (livemode, chain, block_number, log_index)
  WHERE match_checked_at IS NULL;

-- Things that should never happen and must never be hidden: a reorg that takes away money from a
-- confirmed or settled session (deeper than the chain's confirmation rule). Kept for the operator.
CREATE TABLE engine_incidents (
  id bigserial PRIMARY KEY,
  livemode boolean NOT NULL,
  chain text NOT NULL,
  session_id text REFERENCES payment_sessions (id),
  kind text NOT NULL,
  details jsonb NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX engine_incidents_created ON engine_incidents (created_at DESC);
