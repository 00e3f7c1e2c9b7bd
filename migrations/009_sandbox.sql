-- 009: the sandbox's one piece of state beyond the shared tables. A simulated `failed` outcome
-- pays part of a session and must expire it only once that part has confirmed (so the merchant
-- sees payment.underpaid, then payment.failed, in that order, however slow the host is). The
-- marker is a row, not a timer, so it survives restarts; the sandbox tick consumes it.
CREATE TABLE sandbox_expire_when_pending (
  session_id text PRIMARY KEY REFERENCES payment_sessions (id),
  created_at timestamptz NOT NULL DEFAULT now()
);
