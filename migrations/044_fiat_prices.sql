-- 044: Prices in a fiat currency (issue 26). A session may be priced {"amount":"49.00",
-- "currency":"EUR"}: `price` keeps it as given, `price_quote` how the token amount was reached
-- (the rate, each Chainlink feed's address, round id, answer and update time; src/pricing).
-- A payment link may store a price instead of a token amount: each visit's session converts it
-- then, so such a link has no amount of its own (exactly one of the two is set).
ALTER TABLE payment_sessions
  ADD COLUMN price jsonb CHECK (jsonb_typeof(price) = 'object'),
  ADD COLUMN price_quote jsonb CHECK (jsonb_typeof(price_quote) = 'object'),
  ADD CONSTRAINT payment_sessions_price_quoted CHECK ((price IS NULL) = (price_quote IS NULL));

ALTER TABLE payment_links
  ADD COLUMN price jsonb CHECK (jsonb_typeof(price) = 'object'),
  ALTER COLUMN amount DROP NOT NULL,
  ADD CONSTRAINT payment_links_amount_or_price CHECK ((amount IS NULL) <> (price IS NULL));
