-- x402 settlements (docs/agents.md, docs/security.md "x402"): one row per EIP-3009
-- authorization the gateway submits with its gas-only relayer key, for a session's x402 URL or
-- for a merchant's resource server through the facilitator endpoints.
--
-- Exactly once: the token contract's own replay key is (payer, nonce); unique here on
-- (chain, token, payer, nonce), so a signature is submitted at most once however often or
-- concurrently it is retried. The row is written before anything is sent ('submitting'); the
-- signed relayer transaction's hash and raw bytes are written before it is broadcast
-- ('submitted'), so a crash at any point is resolved from the chain (the receipt of that hash,
-- or the authorization's state on the token) and never by sending a second transfer.
CREATE TABLE x402_settlements (
  id               text PRIMARY KEY,
  livemode         boolean NOT NULL,
  chain            text NOT NULL,
  token_address    text NOT NULL,
  payer            text NOT NULL,
  nonce            text NOT NULL,
  -- sha256 of the whole signed authorization (fields and signature): the same signature again is
  -- answered with this row's result; another one with the same nonce is refused.
  signature_hash   text NOT NULL,
  session_id       text NOT NULL REFERENCES payment_sessions (id),
  merchant_id      text NOT NULL REFERENCES merchants (id),
  pay_to           text NOT NULL,
  amount           numeric(78, 0) NOT NULL CHECK (amount > 0),
  valid_before     numeric(78, 0) NOT NULL,
  -- 'resource': paid at a session's x402 URL; 'facilitator': settled for a merchant's server.
  source           text NOT NULL CHECK (source IN ('resource', 'facilitator')),
  status           text NOT NULL CHECK (status IN ('submitting', 'submitted', 'settled', 'failed')),
  tx_hash          text,
  raw_tx           text,
  error_reason     text,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  UNIQUE (chain, token_address, payer, nonce),
  CHECK (status = 'submitting' OR status = 'failed' OR tx_hash IS NOT NULL)
);

-- One authorization in flight or settled per session: a second payer's signature for a session
-- already being paid is refused instead of paying it twice.
CREATE UNIQUE INDEX x402_settlements_one_per_session ON x402_settlements (session_id) WHERE status <> 'failed';

-- Rows a crash may have left in flight, for recovery.
CREATE INDEX x402_settlements_in_flight ON x402_settlements (updated_at) WHERE status IN ('submitting', 'submitted');
