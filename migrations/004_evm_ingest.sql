-- 004: what the EVM ingesters need beyond 002's shared tables.
--
-- A reorg marks every transfer above the common ancestor `removed` in one UPDATE; without an
-- index on the block number that UPDATE scans all of a chain's transfers, and a chain's
-- transfers only grow.
CREATE INDEX transfers_chain_block ON transfers (livemode, chain, block_number);

-- One row per reorg an ingester handled, for operators and audits (the metrics only count them):
-- how deep, from which block, how many transfers it removed, and whether it broke the chain's
-- confirmation rule ('confirmed') or reached below its finalized block ('finalized').
CREATE TABLE chain_reorgs (
  id bigserial PRIMARY KEY,
  livemode boolean NOT NULL,
  chain text NOT NULL,
  common_ancestor bigint NOT NULL,
  depth integer NOT NULL CHECK (depth >= 0),
  removed_transfers integer NOT NULL DEFAULT 0,
  beyond_rule text CHECK (beyond_rule IN ('confirmed', 'finalized')),
  detected_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX chain_reorgs_chain ON chain_reorgs (livemode, chain, detected_at DESC);
