-- 036: deposit sweeps (issue 25; docs/deposit-addresses.md). A sweep is one transaction, signed
-- with the chain's gas-only relayer key, that calls the deposit factory to deploy (when needed) and
-- flush deposit addresses into their merchants' wallets. It can move money only to those wallets
-- (the forwarder's destination is part of its address), so this table is bookkeeping: what was
-- swept, for how much gas, and what failed.
--
-- Exactly once: the signed transaction's hash and raw bytes are recorded ('sent') before it is
-- broadcast, and at most one sweep per chain is in flight (the relayer lock; a 'sent' row is
-- resolved before the next sweep is signed). A crash at any point is resolved from the chain: the
-- recorded transaction is rebroadcast (same bytes, same hash) and its receipt awaited, or, when its
-- nonce was used by another transaction, it is 'dropped' and its deposits wait for the next sweep.
CREATE TABLE deposit_sweeps (
  id            text PRIMARY KEY,
  chain         text NOT NULL,
  livemode      boolean NOT NULL,
  -- The relayer address that signed it, and the nonce it used.
  sender        text NOT NULL,
  nonce         bigint NOT NULL,
  tx_hash       text NOT NULL UNIQUE,
  raw_tx        text NOT NULL,
  -- 'sent': recorded, maybe broadcast, not mined (or un-mined by a reorg); 'mined': receipt
  -- succeeded (items say what moved); 'reverted': mined and reverted; 'dropped': its nonce went to
  -- another transaction, so it never will be mined.
  status        text NOT NULL CHECK (status IN ('sent', 'mined', 'reverted', 'dropped')),
  block_number  bigint,
  block_hash    text,
  gas_used      numeric(78, 0),
  -- Wei per gas actually paid (the receipt's effective gas price).
  gas_price     numeric(78, 0),
  error         text,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  CHECK (status NOT IN ('mined', 'reverted') OR (block_number IS NOT NULL AND gas_used IS NOT NULL))
);

-- Sweeps in flight, per chain (at most one by construction), and recent mined ones a reorg may undo.
CREATE INDEX deposit_sweeps_in_flight ON deposit_sweeps (chain) WHERE status = 'sent';
CREATE INDEX deposit_sweeps_by_block ON deposit_sweeps (chain, block_number) WHERE status IN ('mined', 'reverted');

-- One row per (deposit address, token) a sweep covers. `token` is the token contract, or the zero
-- address for the native coin. `outcome`: 'pending' until the sweep is mined, then 'flushed' with
-- the amount the factory's Flushed event reports (0 when there was nothing), or 'failed' (the
-- token refused, returned false, or the address could not be created).
CREATE TABLE deposit_sweep_items (
  sweep_id         text NOT NULL REFERENCES deposit_sweeps (id),
  position         integer NOT NULL,
  token            text NOT NULL,
  session_id       text REFERENCES payment_sessions (id),
  deposit_address  text NOT NULL,
  destination      text NOT NULL,
  salt             text NOT NULL,
  outcome          text NOT NULL CHECK (outcome IN ('pending', 'flushed', 'failed')),
  amount           numeric(78, 0) CHECK (amount >= 0),
  PRIMARY KEY (sweep_id, position, token)
);

CREATE INDEX deposit_sweep_items_session ON deposit_sweep_items (session_id) WHERE session_id IS NOT NULL;
CREATE INDEX deposit_sweep_items_address ON deposit_sweep_items (deposit_address);
