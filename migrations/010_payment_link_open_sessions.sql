-- 010: the public /pay/<link> route counts a link's open unpaid sessions on every visit (to bound
-- how many due amounts anonymous visitors can reserve); this partial index keeps that count cheap.
CREATE INDEX payment_sessions_link_open ON payment_sessions (payment_link_id) WHERE status = 'created' AND payment_link_id IS NOT NULL;
