-- 043: The customer's choice of chain and token (issue 26). A session or link may accept several
-- (chain, currency) pairs; the customer (or an agent) picks one.
--
-- A session with several options and no choice yet lives in `session_choices`, not in
-- `payment_sessions`: nothing is reserved or matchable before the choice (no due amount, no
-- deposit address, no x402 binding; the engine and the matcher read only `payment_sessions`).
-- The choice inserts the `payment_sessions` row under the same id, in the transaction that
-- sets `chosen_at` on the choice row (src/payments/choices.ts).
CREATE TABLE session_choices (
  id text PRIMARY KEY,
  merchant_id text NOT NULL REFERENCES merchants (id),
  livemode boolean NOT NULL,
  -- The accepted pairs: [{"chain": "base", "currency": "USDC"}, ...], checked at creation.
  payment_options jsonb NOT NULL CHECK (jsonb_typeof(payment_options) = 'array'),
  -- What the session is made of once chosen (amount as decimal text, urls, metadata, purchase
  -- details, attribution, wallet): src/payments/choices.ts's PendingTerms.
  terms jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  -- Set with the chosen pair in the transaction that inserts the payment_sessions row.
  chosen_at timestamptz,
  chain text CHECK (chain IN ('polygon', 'solana', 'base', 'bsc', 'arbitrum', 'optimism')),
  currency text CHECK (currency IN ('USDT', 'USDC')),
  CHECK ((chosen_at IS NULL) = (chain IS NULL) AND (chain IS NULL) = (currency IS NULL))
);
CREATE INDEX session_choices_merchant ON session_choices (merchant_id, livemode, created_at DESC);

-- The pairs a session accepted (null: only its own chain and currency, the single-pair case).
ALTER TABLE payment_sessions ADD COLUMN payment_options jsonb CHECK (jsonb_typeof(payment_options) = 'array');

-- A link's accepted pairs (null: only its chain and currency). With several, the link's chain
-- and currency columns hold the first pair and each visit's customer chooses.
ALTER TABLE payment_links ADD COLUMN payment_options jsonb CHECK (jsonb_typeof(payment_options) = 'array');
