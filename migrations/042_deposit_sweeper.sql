-- 042: the automatic deposit sweeper (issue 25; docs/deposit-addresses.md, "The automatic sweeper").
-- Each pass reads, per chain, the live transfers matched by deposit address that still count
-- (src/deposits/candidates.ts). Without this index that is a scan of every transfer of the chain,
-- amount-mode ones included; with it, only address-mode deposits are read.
CREATE INDEX transfers_address_deposits ON transfers (chain, session_id) WHERE match_method = 'address' AND status = 'observed' AND livemode;
