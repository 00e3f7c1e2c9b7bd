-- 041: What is being bought (issue 26): a description, optional line items and a cancel URL on
-- payment sessions and payment links (a link's are copied into each session it makes). Line
-- items are a JSON array of {name, quantity, unitAmount} with unitAmount in base units as text;
-- src/payments/purchase.ts checks them (at most 50, their total equals the amount) before any
-- row is written.
ALTER TABLE payment_sessions
  ADD COLUMN description text CHECK (length(description) <= 1000),
  ADD COLUMN line_items jsonb CHECK (jsonb_typeof(line_items) = 'array'),
  ADD COLUMN cancel_url text;

ALTER TABLE payment_links
  ADD COLUMN description text CHECK (length(description) <= 1000),
  ADD COLUMN line_items jsonb CHECK (jsonb_typeof(line_items) = 'array'),
  ADD COLUMN cancel_url text;
