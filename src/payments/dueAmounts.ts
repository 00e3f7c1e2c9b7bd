import { prepared, type Sql } from '../store/index.ts';
import { dueAmountLockText } from '../store/lockKeys.ts';
import type { ChainName } from '../internal/config.ts';
import type { Currency } from '../internal/chains.ts';
import { conflict } from '../internal/errors.ts';

/**
 * Due amounts: what makes concurrent sessions on one wallet tell apart by amount alone. A
 * session asks for `amount + k`, a k below one cent that no session reserving the same (chain,
 * currency, wallet) holds while its monitoring window is open: one above the highest held, or the
 * first free one once that reaches the cent (sessionSql.ts `insertSession`; `pick_due_amount` of
 * migration 055, which `createAmountSession` calls, applies the same rule).
 */

/**
 * Largest offset added to make a due amount unique: below one cent (10^(decimals-2) base
 * units), so the payer never pays a visible cent more than asked. At 6 decimals that is 10,000
 * concurrent sessions for the same amount on one wallet and chain.
 */
export function dueOffsetBound(decimals: number): bigint {
  return 10n ** BigInt(Math.max(decimals - 2, 0));
}

/**
 * The refusal when every due amount of a price on a wallet is held ({@link dueOffsetBound} open
 * sessions ask for it): the session's INSERT picks the amount (sessionSql.ts `insertSession`,
 * which reserves across both modes: a sandbox and a live session never ask for the same amount
 * of the same token on the same address, so a real transfer can only ever fit one of them) and
 * returns no row then.
 */
export function noDueAmountLeft(params: { chain: ChainName; currency: Currency; payTo: string; amount: bigint }): Error {
  return conflict(
    `too many open sessions ask for ${params.currency} amount ${params.amount} base units on ${params.chain} to wallet ${params.payTo}; wait for some to expire or vary the amount`,
  );
}

const LOCK_DUE_AMOUNTS = prepared('SELECT pg_advisory_xact_lock(hashtextextended($1, 0)), pg_advisory_xact_lock(hashtextextended($2, 0))');

/**
 * Serialises due-amount picks that could collide, until the transaction ends. A pick for
 * `amount` looks at [amount, amount + bound); two such ranges overlap only when the amounts are
 * less than `bound` apart. Cutting the amount line into buckets of `bound` and locking buckets
 * b and b+1 (b = amount / bound, always in that order, so no deadlock) makes any two
 * overlapping picks share a lock, while different prices on one wallet are created in parallel
 * (a single lock per wallet made a busy merchant's creations queue behind each other).
 */
export async function lockDueAmounts(
  sql: Sql,
  params: { chain: ChainName; currency: Currency; payTo: string; amount: bigint; decimals: number },
): Promise<void> {
  const bucket = params.amount / dueOffsetBound(params.decimals);
  // One statement for both locks (a round trip fewer while the first is held): Postgres evaluates
  // a target list left to right, so every caller takes bucket b before b+1.
  await sql.query(LOCK_DUE_AMOUNTS, dueLockKeys({ ...params, bucket }));
}

/** The advisory-lock texts {@link lockDueAmounts} takes, in order (exported for tests that hold them). */
export function dueLockKeys(params: { chain: ChainName; currency: Currency; payTo: string; bucket: bigint }): string[] {
  return [dueAmountLockText(params), dueAmountLockText({ ...params, bucket: params.bucket + 1n })];
}
