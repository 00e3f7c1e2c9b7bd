-- 011: Idempotency keys belong to the account (merchant and mode), as Stripe scopes them, not to
-- one API key: a retry sent with another key of the same account (a rolled key, a second backend
-- instance with its own key) must replay the first answer, not create a second payment.
ALTER TABLE idempotency_keys ADD COLUMN merchant_id text REFERENCES merchants (id);
ALTER TABLE idempotency_keys ADD COLUMN livemode boolean;
UPDATE idempotency_keys i SET merchant_id = k.merchant_id, livemode = k.livemode FROM api_keys k WHERE k.id = i.api_key_id;
-- Two keys of one account may have used the same Idempotency-Key: the newest claim stays.
DELETE FROM idempotency_keys i USING idempotency_keys newer
 WHERE newer.merchant_id = i.merchant_id AND newer.livemode = i.livemode AND newer.idempotency_key = i.idempotency_key
   AND (newer.created_at, newer.api_key_id) > (i.created_at, i.api_key_id);
ALTER TABLE idempotency_keys ALTER COLUMN merchant_id SET NOT NULL, ALTER COLUMN livemode SET NOT NULL;
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_pkey;
ALTER TABLE idempotency_keys ADD PRIMARY KEY (merchant_id, livemode, idempotency_key);
-- api_key_id stays: which key made the first request.
COMMENT ON COLUMN idempotency_keys.api_key_id IS 'The API key of the first request under this Idempotency-Key.';
