-- 015: Refunds count only confirmed money (docs/security.md, "Refunds count only confirmed money").

-- The part of `amount_received` (the engine's total of counted transfers, confirmed or not) whose
-- transfers meet the chain's confirmation rule, written by the engine with it. The API shows this
-- as `amountReceived` and the difference as `amountPending`; refunds are bounded by it. A second
-- payment to a confirmed session counts in amount_received at once but here only once confirmed.
ALTER TABLE payment_sessions ADD COLUMN amount_confirmed numeric(78, 0) NOT NULL DEFAULT 0;

-- Existing sessions: the same rule as src/engine/confirmations.ts isConfirmed, over the stored
-- heads: at or below the finalized block, or (EVM only) `required_confirmations` deep.
UPDATE payment_sessions s
   SET amount_confirmed = confirmed.total
  FROM (SELECT t.session_id, sum(t.amount) AS total
          FROM transfers t
          JOIN payment_sessions p ON p.id = t.session_id
          JOIN chain_heads h ON h.livemode = t.livemode AND h.chain = t.chain
         WHERE t.status = 'observed'
           AND (t.block_number <= h.finalized_block
                OR (t.chain <> 'solana' AND h.head_block - t.block_number + 1 >= p.required_confirmations))
         GROUP BY t.session_id) confirmed
 WHERE confirmed.session_id = s.id;

-- A completed refund that a reorg left larger than the payment's confirmed money: the engine flags
-- it (and writes `refund.flagged`) for the merchant to look at; it is never cleared silently.
ALTER TABLE refunds ADD COLUMN flagged_at timestamptz;
ALTER TABLE refunds ADD COLUMN flag_reason text;
ALTER TABLE refunds ADD CONSTRAINT refunds_flag_reason CHECK ((flagged_at IS NULL) = (flag_reason IS NULL));
