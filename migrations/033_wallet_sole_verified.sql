-- 033: Spec §4.2 makes merchantWallet "optional when a verified wallet is already configured". A
-- chain with an explicit default pays it, as before; a chain with no default and exactly one
-- verified wallet now pays that wallet (src/payments/terms.ts, docs/api.md). Two or more verified
-- wallets and no default stay a 400: the gateway never guesses between wallets.
--
-- Only a wallet that cannot have been added with a test key may be paid without being chosen.
-- Since 013 only live write keys, dashboard owners and the operator add verified wallets; before,
-- a test key could, and 013 refused to make such a wallet a default. The same reasoning marks it
-- here: a wallet verified before 013 was applied, by a signature (not the operator), while the
-- merchant had a test key with the write scope, is not paid until someone chooses it as default.
ALTER TABLE wallets ADD COLUMN sole_wallet_payable boolean NOT NULL DEFAULT true;

UPDATE wallets w SET sole_wallet_payable = false
 WHERE w.verified_at IS NOT NULL
   AND w.verification_method IS DISTINCT FROM 'operator'
   AND w.verified_at < coalesce((SELECT applied_at FROM schema_migrations WHERE version = 13), 'infinity')
   AND EXISTS (SELECT 1 FROM api_keys k
                WHERE k.merchant_id = w.merchant_id AND NOT k.livemode AND 'write' = ANY (k.scopes)
                  AND k.created_at <= w.verified_at
                  AND (k.revoked_at IS NULL OR k.revoked_at > w.verified_at - interval '1 minute'));

COMMENT ON COLUMN wallets.sole_wallet_payable IS 'false: verified before 013 while a test key could have done it; never paid as the chain''s only verified wallet without being chosen as default.';
