-- 012: the correction of 011, which is never edited (it was, after landing; the original text is
-- back so that databases which applied it still start).
-- migrate: before 011
-- Where two API keys of one account and mode used the same Idempotency-Key, 011 keeps only the
-- newest row, even a running claim over a finished one; a retry would then take the abandoned
-- claim over and create a second payment instead of replaying the first answer. This keeps the
-- finished row (its answer is what a retry must get) and, among equals, the newest. The
-- migration runner applies it just before 011 wherever 011 is still to come, so 011 then finds
-- no duplicate to choose from; it reaches the account through api_keys, so it reads the same
-- before 011 (keys per API key) and after it, where the primary key leaves no duplicate and it
-- deletes nothing. What 011 already deleted on a database that applied it cannot come back.
DELETE FROM idempotency_keys i
 USING idempotency_keys better, api_keys mine, api_keys theirs
 WHERE mine.id = i.api_key_id AND theirs.id = better.api_key_id
   AND theirs.merchant_id = mine.merchant_id AND theirs.livemode = mine.livemode
   AND better.idempotency_key = i.idempotency_key
   AND (better.state = 'done', better.created_at, better.api_key_id) > (i.state = 'done', i.created_at, i.api_key_id);
