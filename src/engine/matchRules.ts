import { covers } from './decide.ts';
import type { Session } from '../payments/session.ts';

/*
 * The matching rules as pure functions over rows (docs/payment-lifecycle.md, "Matching"):
 * `chooseSession` is their definition; `walletCandidates.ts` answers the same question from an
 * index, and `match.ts` reads the rows and writes the outcome.
 */

/**
 * How far a transfer's block time may precede its session's creation and still pay it: chain
 * block timestamps come from validators' clocks (EVM allows ~15 s of drift) and the session row
 * from ours; a minute absorbs both without letting yesterday's payment pay today's session.
 */
export const CLOCK_SKEW_SECONDS = 60;

/**
 * An overpayment is attributed by the "only session waiting on this wallet" rule only up to
 * twice what is still due: a transfer far larger than any open session is more likely the
 * merchant's own money movement than a customer, and is left for the merchant to attribute.
 */
export const SOLE_CANDIDATE_MAX_FACTOR = 2n;

/** The transfer columns matching reads. */
export interface TransferToMatch {
  id: bigint;
  tx_hash: string;
  livemode: boolean;
  chain: string;
  token_address: string;
  to_address: string;
  amount: string;
  reference_keys: string[];
  paid_at: Date;
}

/** The session fields matching reads. */
export const CANDIDATE_FIELDS = [
  'id',
  'merchantId',
  'status',
  'amountDue',
  'tokenAddresses',
  'payTo',
  'livemode',
  'chain',
  'createdAt',
  'monitorUntil',
] as const satisfies readonly (keyof Session)[];

/** A session as matching sees it, with its merchant's payment tolerance; amounts parsed to bigint once per batch. */
export type Candidate = Pick<Session, (typeof CANDIDATE_FIELDS)[number]> & {
  /** What its counted transfers sum to (plus, during a batch, what the batch attributed to it). */
  received: bigint;
  toleranceBps: number;
};

/** How matching attributed a transfer (`manual` is the API's attribution; `address`: a session's deposit address, depositMatch.ts). */
export type MatchMethod = 'reference' | 'amount' | 'claim' | 'address';

/** Whether a payment at `paidAt` falls in the candidate's window (creation less the clock skew .. end of monitoring). */
export function inWindow(candidate: Pick<Candidate, 'createdAt' | 'monitorUntil'>, paidAt: Date): boolean {
  return paidAt.getTime() >= candidate.createdAt.getTime() - CLOCK_SKEW_SECONDS * 1000 && paidAt <= candidate.monitorUntil;
}

/** Still waiting for money: neither confirmed nor settled, and less received than due. */
export const isUnpaid = (c: Candidate): boolean => c.status !== 'settled' && c.status !== 'confirmed' && c.received < c.amountDue;

/** Whether rule 4 (tolerance) lets `amount` pay `c`: below its due amount, within its merchant's tolerance. */
export const tolerates = (c: Candidate, amount: bigint): boolean => amount < c.amountDue && covers(amount, c.amountDue, c.toleranceBps);

/**
 * The verified owner wins: whether amount matching (rules 2 to 5) may pay `candidate`, given the
 * merchants that verified its receiving address on its chain (`verifiers`, wallet rows with
 * `verified_at`; docs/payment-lifecycle.md#matching). Verification is a live-mode fact (wallets
 * are managed with live keys and sandbox sessions pay a sandbox address), so a sandbox session
 * always may. On a live address nobody verified, every session may (and two merchants' sessions
 * there make the wallet ambiguous: `chooseOnWallet`). On one that merchants verified, only their
 * sessions may: another merchant's session there (an inline `merchantWallet`, unverified, given
 * before the owner proved control) never takes a transfer by amount, only by its reference or a
 * claim, so it can neither block the owner's matching nor take the owner's money by amount.
 */
export function amountMatchable(candidate: Pick<Candidate, 'livemode' | 'merchantId'>, verifiers: ReadonlySet<string> | undefined): boolean {
  return !candidate.livemode || verifiers === undefined || verifiers.size === 0 || verifiers.has(candidate.merchantId);
}

/** Oldest first, as the rules' ties want: (created_at, id). */
export const byAge = (a: Candidate, b: Candidate): number => a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/**
 * The session a transfer pays, by the documented rules, in order (docs/payment-lifecycle.md, "Matching"):
 * 1. a Solana Pay `reference` key naming a session on the same chain, wallet and token;
 * 2. the exact `amount_due` of a session on the same (livemode, chain, wallet, token) whose window
 *    (created_at .. monitor_until) holds the payment time: due amounts are unique while reserved;
 * 3. exactly what is still missing on a partly paid session (a top-up);
 * 4. within the merchant's tolerance below the due amount of exactly one unpaid session;
 * 5. the only session on that wallet and token still waiting for money (under- or overpayment,
 *    the latter up to twice what is missing).
 * Ties in 2 and 3 go to the oldest session (created_at, id). Anything else is unmatched.
 * Pure given the rows; `matchTransfers` reads them, once per batch.
 */
export function chooseSession(transfer: TransferToMatch, candidates: Candidate[]): Candidate | undefined {
  const amount = BigInt(transfer.amount);
  const eligible = candidates.filter((c) => inWindow(c, transfer.paid_at));
  const unpaid = eligible.filter(isUnpaid);
  const exact = eligible.filter((c) => c.amountDue === amount);
  if (exact.length > 0) return exact.find((c) => unpaid.includes(c)) ?? exact[0];
  const topUp = unpaid.find((c) => c.received > 0n && c.amountDue - c.received === amount);
  if (topUp) return topUp;
  const tolerated = unpaid.filter((c) => c.received === 0n && tolerates(c, amount));
  if (tolerated.length === 1) return tolerated[0];
  if (unpaid.length === 1) {
    const missing = unpaid[0]!.amountDue - unpaid[0]!.received;
    if (amount <= missing * SOLE_CANDIDATE_MAX_FACTOR) return unpaid[0];
  }
  return undefined;
}
