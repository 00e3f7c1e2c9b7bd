-- Refund completion checks that a transaction's transfer has not already completed another
-- refund (src/payments/refundSql.ts countRefundsPaidBy): find refunds by their transaction hash
-- without reading the whole table. Only completed refunds carry a hash.
CREATE INDEX refunds_tx_hash ON refunds (tx_hash) WHERE tx_hash IS NOT NULL;
