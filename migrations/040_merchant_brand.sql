-- 040: The merchant's brand on the checkout, payment links' pages, receipts and the dashboard
-- (issue 26): an accent colour, a support email or URL, and a logo. The display name is the
-- existing merchants.name. The logo is stored here, in Postgres, so every daemon process serves
-- the same bytes with nothing on disk; only PNG, JPEG and WebP are accepted (checked by their
-- magic bytes in src/accounts/logo.ts, never SVG), at most 256 KiB (the CHECK repeats the limit).
ALTER TABLE merchants
  ADD COLUMN accent_color text CHECK (accent_color ~ '^#[0-9a-f]{6}$'),
  ADD COLUMN support_email text CHECK (length(support_email) BETWEEN 3 AND 254),
  ADD COLUMN support_url text CHECK (length(support_url) BETWEEN 8 AND 2048);

CREATE TABLE merchant_logos (
  merchant_id text PRIMARY KEY REFERENCES merchants (id),
  content_type text NOT NULL CHECK (content_type IN ('image/png', 'image/jpeg', 'image/webp')),
  bytes bytea NOT NULL CHECK (octet_length(bytes) BETWEEN 1 AND 262144),
  width integer NOT NULL CHECK (width BETWEEN 1 AND 4096),
  height integer NOT NULL CHECK (height BETWEEN 1 AND 4096),
  -- Hex sha256 of the bytes: the served URL's version and ETag, so a changed logo is a new URL.
  sha256 text NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);
