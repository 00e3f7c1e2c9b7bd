-- 007: Solana ingest state. On Solana a payment lands in a token account (the merchant wallet's
-- associated token account for the mint, or another account it owns), and history is read per
-- account with getSignaturesForAddress, so the checkpoint is per token account, not per chain
-- (chain_heads keeps the slots). Live data only: the sandbox feeds `transfers` directly.

-- Every token account of a watched wallet for a watched mint, with its cursor: the newest
-- finalized signature such that it and every older one (back to `floor_slot`) are ingested.
-- The cursor moves in the same transaction as the rows it covers (DESIGN.md rule 3).
CREATE TABLE solana_token_accounts (
  address text PRIMARY KEY,
  owner text NOT NULL,
  mint text NOT NULL,
  token_program text NOT NULL,
  -- true: the derived associated token account; false: found with getTokenAccountsByOwner.
  associated boolean NOT NULL,
  cursor_signature text,
  cursor_slot bigint,
  -- History older than this slot is not read (the account was first watched then, less the backfill).
  floor_slot bigint NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX solana_token_accounts_owner ON solana_token_accounts (owner);

-- Every signature seen on a watched token account, once (payments, outgoing transfers, failed
-- transactions alike), with the commitment it was last seen at. 'confirmed' rows are re-checked
-- until their slot is finalized: still there -> 'finalized'; gone -> 'removed' (and their
-- transfer too), which is how a fork abandoned before finality shows on Solana.
CREATE TABLE solana_signatures (
  token_account text NOT NULL REFERENCES solana_token_accounts (address),
  signature text NOT NULL,
  slot bigint NOT NULL,
  commitment text NOT NULL CHECK (commitment IN ('confirmed', 'finalized', 'removed')),
  failed boolean NOT NULL,
  -- transfers.log_index of the credit this signature made to the account (NULL: no credit).
  account_index integer,
  block_time timestamptz,
  observed_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (token_account, signature)
);
CREATE INDEX solana_signatures_pending ON solana_signatures (token_account, slot) WHERE commitment = 'confirmed';
