-- 019: Explicit binding of a transaction to a payment session (docs/payment-lifecycle.md, "Matching").

-- A claim says "the transfers of this transaction pay this session": made by a payer who proves
-- a transaction by its hash (POST /checkout/{id}/transactions, source 'proof') or by the gateway
-- for a transaction it settled itself (x402, source 'x402'). One session per transaction, first
-- claim wins; the matcher honours a claim before reference and amount matching, and only for
-- transfers that pay the claiming session's wallet in one of its tokens. A claim may arrive before
-- the ingester has stored the transaction's transfers: it waits here until they are matched.
CREATE TABLE transaction_claims (
  id bigserial PRIMARY KEY,
  livemode boolean NOT NULL,
  chain text NOT NULL,
  -- As the transfers table stores it: lowercase hex on EVM chains, the base58 signature on solana.
  tx_hash text NOT NULL,
  session_id text NOT NULL REFERENCES payment_sessions (id),
  source text NOT NULL CHECK (source IN ('proof', 'x402')),
  created_at timestamptz NOT NULL DEFAULT now(),
  -- Set by the matcher when a transfer of the transaction could not go to the claiming session
  -- (another wallet or token, outside the session's window, or a reference / exact due amount of
  -- another session): that transfer stays with the other evidence, never with the claim.
  refused_at timestamptz,
  refused_reason text,
  UNIQUE (livemode, chain, tx_hash)
);
CREATE INDEX transaction_claims_session ON transaction_claims (session_id);

-- A transfer bound by a claim says so.
ALTER TABLE transfers DROP CONSTRAINT transfers_match_method_check;
ALTER TABLE transfers ADD CONSTRAINT transfers_match_method_check CHECK (match_method IN ('reference', 'amount', 'manual', 'claim'));
