/**
 * Every Postgres advisory-lock key the daemon takes, in one place, so no two can collide.
 *
 * Postgres has two key spaces that never meet: one bigint (`pg_advisory_lock(bigint)`, shown in
 * `pg_locks` with `objsubid = 1`) and a pair of int4 (`pg_advisory_lock(int4, int4)`,
 * `objsubid = 2`). Within each space a key is one of:
 * - a constant spelling its owner in ASCII (bigint space: "svc-boot", "svc-migr"; pair space: a
 *   class "svci" / "svc\0" in the first int4);
 * - a namespaced text hashed by `hashtextextended(text, 0)` into the bigint space
 *   ("svc.engine:…", "due:…"): the prefixes keep our texts apart, and a 64-bit hash meeting one of
 *   the two constants is a 2^-63 chance;
 * - pg-boss's own, also in the bigint space: the first 64 bits of sha224(database + '.pgboss.' +
 *   schema), taken inside its maintenance transactions; not ours to define, listed so nobody
 *   reuses that form.
 *
 * The values are the ones each lock had before this registry existed: a rolling upgrade runs old
 * and new processes side by side, and they must fight over the same keys. Never change a value
 * without a release in which no old process is left.
 */

/** Bigint key: `bootstrapFirstMerchant`, so two daemons starting on an empty database create one merchant ("svc-boot"). */
export const BOOTSTRAP_LOCK_KEY = 0x7376632d626f6f74n;

/** Bigint key: the session-level lock that serialises migrations across processes ("svc-migr"). */
export const MIGRATION_LOCK_KEY = 0x7376632d6d696772n;

/**
 * Text for `hashtextextended($1, 0)`: the engine's per (livemode, chain) transaction lock. Every
 * writer of payment state takes it first, then row locks (engine/lock.ts).
 */
export function engineChainLockText(params: { livemode: boolean; chain: string }): string {
  return `svc.engine:${params.livemode}:${params.chain}`;
}

/**
 * Text for `hashtextextended($1, 0)`: one bucket of due amounts on one (chain, currency, wallet),
 * taken while a session picks its unique amount (engine/sessions.ts `lockDueAmounts`).
 */
export function dueAmountLockText(params: { chain: string; currency: string; payTo: string; bucket: bigint }): string {
  return `due:${params.chain}:${params.currency}:${params.payTo}:${params.bucket}`;
}

/**
 * Text for `hashtextextended($1, 0)`: one chain's x402 relayer, held (session-level, on its own
 * connection) from reading the relayer's next nonce until its signed transaction is recorded and
 * broadcast, so two processes sharing one relayer key never sign two transactions with one nonce.
 * Deposit sweeps (src/deposits) sign with the same key and hold the same lock.
 */
export function x402RelayerLockText(chain: string): string {
  return `svc.x402-relayer:${chain}`;
}

/**
 * Text for `hashtextextended($1, 0)`: one chain's automatic deposit sweeper (src/deposits/sweeper.ts),
 * held session-level on its own connection for a whole pass (pick deposits, sweep, record), so two
 * worker processes never build overlapping batches; a worker that cannot take it skips the chain
 * this pass. Taken before the relayer lock, never while holding it.
 */
export function depositSweeperLockText(chain: string): string {
  return `svc.deposit-sweeper:${chain}`;
}

/**
 * Text for `hashtextextended($1, 0)`: one Idempotency-Key of one account and mode, held by a
 * request that claims the key inside its own transaction (api/idempotency.ts
 * `claimIdempotencyKeyInTransaction`) until that transaction ends, so a concurrent retry answers
 * 409 at once instead of waiting on the uncommitted claim.
 */
export function idempotencyKeyLockText(params: { merchantId: string; livemode: boolean; key: string }): string {
  return `svc.idempotency:${params.merchantId}:${params.livemode}:${params.key}`;
}

/** An int4 pair key: (class, id). */
export type LockPair = readonly [classId: number, objectId: number];

/** Class of the EVM ingesters' leader locks ("svci"); the second int4 is the chain id. */
export const EVM_INGEST_LOCK_CLASS = 0x73766369;

/**
 * The Solana ingester's leader lock: class "svc\0", id "sol". Its own class, so no EVM chain id
 * can ever name it.
 */
export const SOLANA_INGEST_LOCK: LockPair = [0x73766300, 0x736f6c];

/** The leader lock of one chain's ingester (session-level, held on the leader connection; see ingest/leader.ts). */
export function ingestLockKey(chain: { kind: string; chainId: number | string }): LockPair {
  if (chain.kind === 'solana') return SOLANA_INGEST_LOCK;
  return [EVM_INGEST_LOCK_CLASS, Number(chain.chainId)];
}
