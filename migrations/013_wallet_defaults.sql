-- 013: The wallet that live sessions without a merchantWallet pay is chosen explicitly: at most one
-- default per (merchant, chain), and only a verified wallet can be it. Until now it was the oldest
-- verified wallet, and a test key could add one, so a sandbox key could redirect live payments.
ALTER TABLE wallets ADD COLUMN is_default boolean NOT NULL DEFAULT false;
ALTER TABLE wallets ADD CONSTRAINT wallets_default_is_verified CHECK (NOT is_default OR verified_at IS NOT NULL);
CREATE UNIQUE INDEX wallets_one_default ON wallets (merchant_id, chain) WHERE is_default;
-- The cap on unverified (inline) wallets counts them per merchant.
CREATE INDEX wallets_unverified ON wallets (merchant_id) WHERE verified_at IS NULL;

-- Upgrade: the rows do not record which key added a wallet, so today's rule (the oldest verified
-- wallet) is kept only where that wallet cannot have been added with a test key: the operator
-- added it (CLI), or no test key with the write scope existed and was unrevoked when it was
-- verified (then a live key did it). Anywhere else the chain gets no default: a live session
-- without merchantWallet is a 400 until the merchant (live key) or the operator picks one. A
-- missing default stops payments with a clear error; a wrong one sends money to a stranger.
UPDATE wallets w SET is_default = true
  FROM (SELECT DISTINCT ON (merchant_id, chain) id, merchant_id, verification_method, verified_at
          FROM wallets WHERE verified_at IS NOT NULL
         ORDER BY merchant_id, chain, created_at, id) oldest
 WHERE w.id = oldest.id
   AND (oldest.verification_method = 'operator'
        OR NOT EXISTS (SELECT 1 FROM api_keys k
                        WHERE k.merchant_id = oldest.merchant_id AND NOT k.livemode AND 'write' = ANY (k.scopes)
                          AND k.created_at <= oldest.verified_at
                          AND (k.revoked_at IS NULL OR k.revoked_at > oldest.verified_at - interval '1 minute')));

COMMENT ON COLUMN wallets.is_default IS 'Paid by live sessions and links of this chain that name no merchantWallet; set explicitly, never inferred.';
