-- Issue 28 goal 4: a session's unique due amount picked by a function, so that one statement can
-- take the due-amount locks and insert the session (src/payments/createAmountSession.ts). The
-- pick must see every session committed before the locks were granted; a statement's own
-- snapshot is taken before it waits on them, but a VOLATILE PL/pgSQL function takes a fresh
-- snapshot for each statement it runs (read committed), after the caller's locks are held.
-- The rule is the one insertSession (src/payments/sessionSql.ts) applies in SQL: the due amount
-- is `amount + k`, k in [0, bound), that no `amount` mode session on the same (chain, currency,
-- pay_to) holds while its monitoring window is open, in either mode: one above the highest held,
-- `amount` when none is, and only when that reaches the bound the first free one. A result at or
-- above amount + bound means none is left (the caller inserts nothing then).
-- Its queries keep their generic plans (two index lookups, as when they were part of the
-- prepared INSERT): left to choose, a backend whose first calls ran on a nearly empty table may
-- switch to planning every call once statistics change (measured 3-4x slower per call).
CREATE FUNCTION pick_due_amount(p_chain text, p_currency text, p_pay_to text, p_amount numeric, p_bound numeric)
RETURNS numeric LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $$
DECLARE
  top numeric;
  gap numeric;
BEGIN
  -- Two index lookups (payment_sessions_match read backwards from the top of the range), one per mode.
  SELECT greatest(
    (SELECT max(s.amount_due) FROM payment_sessions s
      WHERE s.livemode = false AND s.chain = p_chain AND s.pay_to = p_pay_to AND s.currency = p_currency
        AND s.amount_due >= p_amount AND s.amount_due < p_amount + p_bound AND s.monitor_until > now() AND s.attribution = 'amount'),
    (SELECT max(s.amount_due) FROM payment_sessions s
      WHERE s.livemode = true AND s.chain = p_chain AND s.pay_to = p_pay_to AND s.currency = p_currency
        AND s.amount_due >= p_amount AND s.amount_due < p_amount + p_bound AND s.monitor_until > now() AND s.attribution = 'amount'))
    INTO top;
  IF top IS NULL THEN
    RETURN p_amount;
  END IF;
  IF top + 1 < p_amount + p_bound THEN
    RETURN top + 1;
  END IF;
  -- The top is taken: the first gap. In the order of the held amounts, with amount - 1 put first,
  -- one above the first that the next does not follow immediately.
  SELECT g.amount_due + 1 INTO gap
    FROM (SELECT c.amount_due, lead(c.amount_due) OVER (ORDER BY c.amount_due) AS next
            FROM (SELECT p_amount - 1 AS amount_due
                  UNION ALL
                  SELECT s.amount_due FROM payment_sessions s
                   WHERE s.livemode IN (false, true) AND s.chain = p_chain AND s.currency = p_currency AND s.pay_to = p_pay_to
                     AND s.amount_due >= p_amount AND s.amount_due < p_amount + p_bound AND s.monitor_until > now()
                     AND s.attribution = 'amount') c) g
   WHERE g.next IS NULL OR g.next > g.amount_due + 1
   ORDER BY g.amount_due
   LIMIT 1;
  RETURN gap;
END
$$;
