-- 002: the core of the money path, shared by every stage: payment sessions (one resource seen
-- through Interface A and B), the transfers and blocks the ingesters observe, each chain's head
-- and checkpoint, and the transactional outbox of events. Amounts are numeric(78,0) base units
-- (uint256 fits); `livemode = false` rows belong to the sandbox, which feeds the same tables.

CREATE TABLE payment_sessions (
  id text PRIMARY KEY,
  merchant_id text NOT NULL REFERENCES merchants (id),
  livemode boolean NOT NULL,
  status text NOT NULL DEFAULT 'created'
    CHECK (status IN ('created', 'pending', 'confirming', 'confirmed', 'settled', 'expired', 'failed')),
  chain text NOT NULL CHECK (chain IN ('polygon', 'solana', 'base', 'bsc', 'arbitrum', 'optimism')),
  currency text NOT NULL CHECK (currency IN ('USDT', 'USDC')),
  -- Decimals of the currency on this chain when the session was made (6, or 18 on bsc).
  decimals smallint NOT NULL,
  -- What the merchant asked for.
  amount numeric(78, 0) NOT NULL CHECK (amount > 0),
  -- What the payer must send: amount plus a small offset in the lowest decimals that makes it
  -- unique among sessions reserving the same (livemode, chain, currency, pay_to) amount.
  amount_due numeric(78, 0) NOT NULL CHECK (amount_due >= amount),
  -- Sum of the counted transfers matched to this session (maintained by the engine).
  amount_received numeric(78, 0) NOT NULL DEFAULT 0,
  -- The flat 1% fee in base units.
  fee numeric(78, 0) NOT NULL CHECK (fee >= 0),
  -- Token contracts (EVM) or mints (solana) accepted for this session, canonical form.
  token_addresses text[] NOT NULL,
  -- The merchant's receiving wallet (canonical form).
  pay_to text NOT NULL,
  -- Solana Pay reference public key (solana only).
  reference text UNIQUE,
  tx_hash text,
  confirmations integer NOT NULL DEFAULT 0,
  required_confirmations integer NOT NULL,
  metadata jsonb NOT NULL DEFAULT '{}',
  webhook_url text,
  success_url text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  -- End of the monitoring window: payments until then still count (late), and amount_due stays
  -- reserved until then.
  monitor_until timestamptz NOT NULL,
  detected_at timestamptz,
  confirmed_at timestamptz,
  settled_at timestamptz,
  expired_at timestamptz,
  failed_at timestamptz,
  failure_reason text,
  CHECK (monitor_until >= expires_at)
);
CREATE INDEX payment_sessions_list ON payment_sessions (merchant_id, livemode, created_at DESC, id DESC);
-- Matching by amount, and the due-amount reservation check.
CREATE INDEX payment_sessions_match ON payment_sessions (livemode, chain, pay_to, amount_due, monitor_until);
-- Expiry sweeps.
CREATE INDEX payment_sessions_open ON payment_sessions (expires_at) WHERE status IN ('created', 'pending', 'confirming');

-- Every token transfer into a watched wallet, observed once (rule 2 of DESIGN.md).
CREATE TABLE transfers (
  id bigserial PRIMARY KEY,
  livemode boolean NOT NULL,
  chain text NOT NULL,
  tx_hash text NOT NULL,
  -- EVM: the log index in the block; solana: the index that makes (signature, token account) unique.
  log_index integer NOT NULL,
  -- EVM block number; solana slot.
  block_number bigint NOT NULL,
  block_hash text,
  block_time timestamptz,
  token_address text NOT NULL,
  from_address text,
  -- The receiving wallet (EVM recipient; solana: the owner of the receiving token account).
  to_address text NOT NULL,
  amount numeric(78, 0) NOT NULL CHECK (amount > 0),
  -- Solana Pay reference keys found in the transaction.
  reference_keys text[] NOT NULL DEFAULT '{}',
  -- observed: counts; removed: orphaned by a reorg (kept for audit); failed: the transaction failed.
  status text NOT NULL DEFAULT 'observed' CHECK (status IN ('observed', 'removed', 'failed')),
  removed_at timestamptz,
  -- The session this transfer pays; NULL while unmatched.
  session_id text REFERENCES payment_sessions (id),
  match_method text CHECK (match_method IN ('reference', 'amount', 'manual')),
  matched_at timestamptz,
  observed_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (livemode, chain, tx_hash, log_index)
);
CREATE INDEX transfers_session ON transfers (session_id) WHERE session_id IS NOT NULL;
CREATE INDEX transfers_unmatched ON transfers (livemode, chain, to_address, observed_at) WHERE session_id IS NULL;

-- Unfinalized blocks as a hash-linked list per chain, for reorg detection (pruned at finality).
CREATE TABLE chain_blocks (
  livemode boolean NOT NULL,
  chain text NOT NULL,
  number bigint NOT NULL,
  hash text NOT NULL,
  parent_hash text NOT NULL,
  block_time timestamptz,
  PRIMARY KEY (livemode, chain, number)
);

-- Each chain's head as the ingester last saw it, and its checkpoint. `processed_block` moves in
-- the same transaction as the transfers and blocks it covers (rule 3).
CREATE TABLE chain_heads (
  livemode boolean NOT NULL,
  chain text NOT NULL,
  head_block bigint,
  processed_block bigint,
  safe_block bigint,
  finalized_block bigint,
  head_seen_at timestamptz,
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (livemode, chain)
);

-- The transactional outbox: a state change and the event that reports it commit together
-- (rule 5). `payload` is the whole envelope as delivered (spec §6.2 plus `id`), fixed at
-- creation so every redelivery sends the same body.
CREATE TABLE events (
  id text PRIMARY KEY,
  seq bigserial UNIQUE,
  merchant_id text NOT NULL REFERENCES merchants (id),
  livemode boolean NOT NULL,
  type text NOT NULL,
  session_id text REFERENCES payment_sessions (id),
  refund_id text,
  payload jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX events_merchant ON events (merchant_id, livemode, created_at DESC);
CREATE INDEX events_session ON events (session_id, seq) WHERE session_id IS NOT NULL;
