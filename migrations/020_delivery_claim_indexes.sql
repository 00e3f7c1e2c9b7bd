-- 020: Claiming due webhook deliveries without reading the whole queue (issue 16 goal 4). The
-- claim takes, for each target (endpoint, or a session's URL), its oldest due deliveries up to
-- the per-target cap less what that target has in flight. It used to rank every pending delivery
-- on every claim, so a backlog of 5,000 made each claim read and sort 5,000 rows.
--
-- Pending deliveries by target in due order: the claim walks the distinct targets (a skip scan)
-- and reads only the first few due rows of each.
CREATE INDEX webhook_deliveries_target_due ON webhook_deliveries ((coalesce(endpoint_id, url)), next_attempt_at, id)
  WHERE status = 'pending';
-- Pending deliveries under a lease (or whose lease ran out and was not cleared: a worker that
-- died): a few per worker, counted per target for the cap.
CREATE INDEX webhook_deliveries_leased ON webhook_deliveries ((coalesce(endpoint_id, url)), locked_until)
  WHERE status = 'pending' AND locked_until IS NOT NULL;
