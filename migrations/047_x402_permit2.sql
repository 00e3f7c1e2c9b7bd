-- x402 for every EVM token (docs/agents.md, docs/security.md "x402"):
--
-- 1. Permit2: tokens without EIP-3009 (USDT, bridged USDC.e, bsc's tokens) are paid through
--    x402's exact Permit2 proxy. A settlement row says which route it took, so recovery asks the
--    right contract whether its nonce is spent (the token's authorizationState, or Permit2's
--    nonce bitmap). Rows written before this migration are all EIP-3009.
ALTER TABLE x402_settlements
  ADD COLUMN method text NOT NULL DEFAULT 'eip3009' CHECK (method IN ('eip3009', 'permit2'));

-- 2. The payment-identifier extension: a client's idempotency key, per merchant. The same id with
--    the same payload answers the first result; with another payload it is refused (409).
CREATE TABLE x402_payment_ids (
  merchant_id   text NOT NULL REFERENCES merchants (id),
  payment_id    text NOT NULL CHECK (payment_id ~ '^[A-Za-z0-9_-]{16,128}$'),
  -- sha256 of the signed payload (settlements.ts signatureHash): what the id was first used with.
  payload_hash  text NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (merchant_id, payment_id)
);

-- 3. Discovery (/discovery/resources): a payment link is listed only when its merchant opts it in.
ALTER TABLE payment_links ADD COLUMN x402_discoverable boolean NOT NULL DEFAULT false;
CREATE INDEX payment_links_x402_discoverable ON payment_links (merchant_id, created_at DESC, id DESC) WHERE x402_discoverable;
