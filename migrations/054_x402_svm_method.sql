-- x402 on Solana (issue 29): a settlement row says how the payer's signature moves the tokens.
-- Solana rows (a TransferChecked the gateway's fee payer co-signs) were written with 047's
-- default, 'eip3009'; they say 'svm' now, and the check admits it.
ALTER TABLE x402_settlements DROP CONSTRAINT IF EXISTS x402_settlements_method_check;
ALTER TABLE x402_settlements ADD CONSTRAINT x402_settlements_method_check CHECK (method IN ('eip3009', 'permit2', 'svm'));
UPDATE x402_settlements SET method = 'svm' WHERE chain = 'solana';
