-- 001: merchants, their API keys and their receiving wallets: the accounts that every later
-- table hangs off. Keys are stored only as a SHA-256 hash (they are 190-bit random strings, so a
-- plain hash cannot be brute-forced); webhook secrets must be read back to sign, so they are
-- sealed with AES-256-GCM under the daemon's encryption key instead.

CREATE TABLE merchants (
  id text PRIMARY KEY,
  name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  -- Default signing secret for per-session webhookUrl deliveries (spec §6.3), sealed.
  webhook_secret_sealed text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_keys (
  id text PRIMARY KEY,
  merchant_id text NOT NULL REFERENCES merchants (id),
  -- false: sandbox (test) key, true: production (live) key.
  livemode boolean NOT NULL,
  -- The key's visible prefix and last four characters, so people can tell keys apart.
  prefix text NOT NULL,
  last4 text NOT NULL,
  secret_hash text NOT NULL UNIQUE,
  scopes text[] NOT NULL CHECK (cardinality(scopes) > 0 AND scopes <@ ARRAY['read', 'write']),
  description text,
  created_at timestamptz NOT NULL DEFAULT now(),
  last_used_at timestamptz,
  revoked_at timestamptz
);
CREATE INDEX api_keys_merchant ON api_keys (merchant_id, created_at);

CREATE TABLE wallets (
  id text PRIMARY KEY,
  merchant_id text NOT NULL REFERENCES merchants (id),
  chain text NOT NULL CHECK (chain IN ('polygon', 'solana', 'base', 'bsc', 'arbitrum', 'optimism')),
  -- Canonical form: EIP-55 checksummed hex on EVM chains, base58 on solana.
  address text NOT NULL,
  -- How ownership was shown: 'eip191' or 'ed25519' signature, or 'operator' (added with the CLI).
  verification_method text CHECK (verification_method IN ('eip191', 'ed25519', 'operator')),
  verified_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (merchant_id, chain, address),
  CHECK ((verified_at IS NULL) = (verification_method IS NULL))
);
-- The ingesters look wallets up by (chain, address) across merchants.
CREATE INDEX wallets_chain_address ON wallets (chain, address);

-- A message a wallet must sign to prove it belongs to the merchant; single use, short-lived.
CREATE TABLE wallet_challenges (
  id text PRIMARY KEY,
  merchant_id text NOT NULL REFERENCES merchants (id),
  chain text NOT NULL,
  address text NOT NULL,
  message text NOT NULL,
  expires_at timestamptz NOT NULL,
  used_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now()
);
