-- 014: webhook signing secrets per mode, with a rotation overlap (issue 13). Until now one
-- merchant secret signed both sandbox and live per-session webhookUrl deliveries, so a test key
-- could make the gateway sign a sandbox payment.confirmed that verified at the live receiver.
--
-- The merchant's secret for per-session webhookUrl deliveries is now one row per mode. The
-- existing secret stays the LIVE one (live receivers keep verifying). No sandbox row is made
-- here: secrets are sealed with the daemon's key, which SQL does not have, so the daemon makes
-- a sandbox secret the first time it needs one; the merchant gets it by rotating it with a test
-- key. Merchants created from now on get both rows at once.
CREATE TABLE merchant_webhook_secrets (
  merchant_id text NOT NULL REFERENCES merchants (id),
  livemode boolean NOT NULL,
  -- The current secret (AES-256-GCM, SecretBox): every delivery is signed with it.
  secret_sealed text NOT NULL,
  -- The secret it replaced, still signing (a second signature) until previous_expires_at.
  previous_secret_sealed text,
  previous_expires_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  rotated_at timestamptz,
  PRIMARY KEY (merchant_id, livemode),
  CHECK ((previous_secret_sealed IS NULL) = (previous_expires_at IS NULL))
);

INSERT INTO merchant_webhook_secrets (merchant_id, livemode, secret_sealed, created_at)
SELECT id, true, webhook_secret_sealed, created_at FROM merchants;

-- One place holds each secret: the copy in merchants would outlive a rotation.
ALTER TABLE merchants DROP COLUMN webhook_secret_sealed;

-- Registered endpoints already have a secret each, and an endpoint belongs to one mode. A
-- rotation may keep the old one signing for a while, as for merchants.
ALTER TABLE webhook_endpoints ADD COLUMN previous_secret_sealed text;
ALTER TABLE webhook_endpoints ADD COLUMN previous_secret_expires_at timestamptz;
ALTER TABLE webhook_endpoints ADD CONSTRAINT webhook_endpoints_previous_secret
  CHECK ((previous_secret_sealed IS NULL) = (previous_secret_expires_at IS NULL));
