-- 045: A fiat price with several payment options (issue 26). A session waiting for its customer's
-- choice may be priced {"amount":"49.00","currency":"EUR"} instead of a token amount: the price
-- is kept here as given, and converted for the pair the customer chooses, at the choice (the
-- chosen payment_sessions row then records price and price_quote as a single-pair session does).
-- Exactly one of a token amount (terms' "amount") and a price.
ALTER TABLE session_choices
  ADD COLUMN price jsonb CHECK (jsonb_typeof(price) = 'object'),
  ADD CONSTRAINT session_choices_amount_or_price CHECK ((price IS NULL) = (terms ? 'amount'));
