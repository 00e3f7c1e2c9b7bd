-- 034: attribution by deposit address (issue 25; docs/deposit-addresses.md, docs/payment-lifecycle.md#matching).
--
-- A session in `address` mode is paid at an address of its own (the CREATE2 address of a forwarder
-- whose only destination is the merchant's wallet, `pay_to`): every transfer to it pays that
-- session, whatever its amount or sender, so its due amount is the plain amount. `amount` mode
-- (a unique due amount on the shared wallet) stays the default. EVM chains only: solana keeps its
-- Solana Pay references, which already name one session.
ALTER TABLE payment_sessions
  ADD COLUMN attribution text NOT NULL DEFAULT 'amount' CHECK (attribution IN ('amount', 'address')),
  ADD COLUMN deposit_address text,
  ADD CONSTRAINT payment_sessions_deposit_address_mode CHECK ((attribution = 'address') = (deposit_address IS NOT NULL));

-- One session per deposit address and chain (the salt binds the session id). Matching finds a
-- transfer's session by its recipient here, and a sweep (a transfer *from* a deposit address into
-- the merchant's wallet) by its sender, whatever the session's age: a full, not a partial-by-time, index.
CREATE UNIQUE INDEX payment_sessions_deposit_address ON payment_sessions (chain, deposit_address) WHERE deposit_address IS NOT NULL;

-- The live ingester's watched set (src/ingest/evm/depositWatch.ts): its first read takes every
-- live deposit address whose monitoring window is still open, its refreshes those created since
-- the last one and those whose window ended. Both by index, never a scan of every session.
CREATE INDEX payment_sessions_deposit_open ON payment_sessions (chain, monitor_until) WHERE deposit_address IS NOT NULL AND livemode;
CREATE INDEX payment_sessions_deposit_new ON payment_sessions (chain, created_at) WHERE deposit_address IS NOT NULL AND livemode;

-- A link fixes its mode, or (NULL) follows the merchant's default at each visit, as its wallet does.
ALTER TABLE payment_links ADD COLUMN attribution text CHECK (attribution IN ('amount', 'address'));

-- The merchant's default for sessions that do not say (on solana `address` means references).
ALTER TABLE merchants ADD COLUMN default_attribution text NOT NULL DEFAULT 'amount' CHECK (default_attribution IN ('amount', 'address'));

-- `address`: matched by its recipient, a session's deposit address. `sweep`: a forwarder moving a
-- deposit on to the merchant's wallet (sender: a deposit address); it pays no session (the deposit
-- already did), so it is kept without a session and never matched by amount.
ALTER TABLE transfers DROP CONSTRAINT transfers_match_method_check;
ALTER TABLE transfers ADD CONSTRAINT transfers_match_method_check CHECK (match_method IN ('reference', 'amount', 'manual', 'claim', 'address', 'sweep'));
