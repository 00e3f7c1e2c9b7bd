-- 049: Link visits without payment (issue 27, src/payments/linkVisits.ts). A single-pair payment
-- link makes a session at each visit; the dashboard lists leave out the ones never paid and
-- count them apart. This partial index holds only such visits (by merchant, mode and creation
-- time), so counting them reads the visits, never the merchant's whole history. A session leaves
-- it when a payment moves its status or amount; the "no transfer matched" part is checked
-- against transfers_session at read time (an index predicate cannot look at another table).
CREATE INDEX payment_sessions_link_visits ON payment_sessions (merchant_id, livemode, created_at DESC)
  WHERE payment_link_id IS NOT NULL AND payment_options IS NULL
    AND status IN ('created', 'pending', 'expired') AND amount_received = 0;
