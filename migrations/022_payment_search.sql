-- 022: the dashboard's payment search (issue 15) finds a payment by the hash of a transfer that
-- paid it or by any value of its metadata. Both lookups go through an index, so a search costs
-- the matches, not a scan of the merchant's payments.

-- A transaction hash (EVM) or signature (solana), whatever the chain and mode.
CREATE INDEX transfers_tx_hash ON transfers (tx_hash);

-- jsonb_ops (keys and values indexed separately) serves `metadata @? '$.* ? (@ == "value")'`:
-- a value under any key (jsonb_path_ops would need the key).
CREATE INDEX payment_sessions_metadata ON payment_sessions USING gin (metadata);
