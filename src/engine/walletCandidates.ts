import { amountMatchable, byAge, chooseSession, inWindow, isUnpaid, tolerates, type Candidate, type TransferToMatch } from './matchRules.ts';

/**
 * The candidate sessions of one matching batch on one wallet, indexed so that deciding a transfer
 * costs a few lookups instead of a pass over every session of the wallet. A wallet with 3,000
 * open sessions and a backfill of transfers that pay none of them (the merchant's own movements,
 * spam) used to cost 3,000 checks per transfer; the engine then matched under 1,000 transfers/s
 * while the ingester stored 20,000/s (issue 16, goal 3).
 */
export interface WalletSessions {
  /** Every candidate, oldest first. */
  all: Candidate[];
  byId: Map<string, Candidate>;
  /** Rule 2: candidates by due amount, each list oldest first. */
  byDue: Map<bigint, Candidate[]>;
  /** Rule 4: the distinct due amounts, ascending, so a tolerance looks at a range of them. */
  dues: bigint[];
  /**
   * Rule 3: candidates with money counted when read and still waiting for more, oldest first
   * (with the sessions the batch attributed money to, the only top-up targets).
   */
  partlyPaid: Candidate[];
  /**
   * Rule 5: candidates still waiting for money when read, oldest first. What the batch attributes
   * only adds to `received`, so no other candidate can be waiting now; reading these rather than
   * every candidate matters once the oldest thousand sessions of a wallet are paid.
   */
  unpaid: Candidate[];
  merchants: Set<string>;
  /** The largest payment tolerance among the candidates: bounds rule 4's range of due amounts. */
  maxToleranceBps: number;
}

/**
 * Groups a batch's candidate sessions by wallet and indexes each wallet's, leaving out the sessions
 * amount matching may not pay (`amountMatchable`, given `verifiers`: by receiving address, the
 * merchants that verified it on the batch's chain).
 */
export function indexWallets(candidates: Candidate[], verifiers?: ReadonlyMap<string, ReadonlySet<string>>): Map<string, WalletSessions> {
  const byWallet = new Map<string, WalletSessions>();
  for (const candidate of [...candidates].sort(byAge)) {
    if (!amountMatchable(candidate, verifiers?.get(candidate.payTo))) continue;
    let wallet = byWallet.get(candidate.payTo);
    if (!wallet) {
      wallet = { all: [], byId: new Map(), byDue: new Map(), dues: [], partlyPaid: [], unpaid: [], merchants: new Set(), maxToleranceBps: 0 };
      byWallet.set(candidate.payTo, wallet);
    }
    wallet.all.push(candidate);
    wallet.byId.set(candidate.id, candidate);
    wallet.merchants.add(candidate.merchantId);
    wallet.maxToleranceBps = Math.max(wallet.maxToleranceBps, candidate.toleranceBps);
    if (isUnpaid(candidate)) {
      wallet.unpaid.push(candidate);
      if (candidate.received > 0n) wallet.partlyPaid.push(candidate);
    }
    const sameDue = wallet.byDue.get(candidate.amountDue);
    if (sameDue) sameDue.push(candidate);
    else wallet.byDue.set(candidate.amountDue, [candidate]);
  }
  for (const wallet of byWallet.values()) wallet.dues = [...wallet.byDue.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return byWallet;
}

/**
 * `candidate` as `transfer` sees it: undefined when the token or the payment time rules it out,
 * otherwise with what the batch has already attributed to it added to `received`.
 */
function inPlay(candidate: Candidate, transfer: TransferToMatch, pending: ReadonlyMap<string, bigint>): Candidate | undefined {
  if (!candidate.tokenAddresses.includes(transfer.token_address) || !inWindow(candidate, transfer.paid_at)) return undefined;
  const attributed = pending.get(candidate.id);
  return attributed === undefined ? candidate : { ...candidate, received: candidate.received + attributed };
}

function allInPlay(list: Candidate[], transfer: TransferToMatch, pending: ReadonlyMap<string, bigint>): Candidate[] {
  const out: Candidate[] = [];
  for (const candidate of list) {
    const seen = inPlay(candidate, transfer, pending);
    if (seen) out.push(seen);
  }
  return out;
}

/** Index of the first element of ascending `sorted` greater than `value`. */
function firstAbove(sorted: bigint[], value: bigint): number {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (sorted[mid]! <= value) low = mid + 1;
    else high = mid;
  }
  return low;
}

/**
 * The session `transfer` pays among one wallet's candidates, given what the batch has already
 * attributed (`pending`, by session id): exactly `chooseSession` over the wallet's sessions in
 * play (right token, payment time in their window), and nothing when those belong to two
 * merchants (the amount cannot say whose money it is; a verified owner attributes it by hand).
 * The index holds only the sessions amount matching may pay, so on an address one merchant
 * verified the others' sessions are not there (the verified owner wins, `amountMatchable`).
 * Each rule reads only the sessions it can pick (test/engine/walletCandidates.test.ts checks
 * the equivalence on random wallets).
 */
export function chooseOnWallet(wallet: WalletSessions, transfer: TransferToMatch, pending: ReadonlyMap<string, bigint>): Candidate | undefined {
  if (wallet.merchants.size > 1) {
    const sessions = allInPlay(wallet.all, transfer, pending);
    if (new Set(sessions.map((candidate) => candidate.merchantId)).size > 1) return undefined;
    return chooseSession(transfer, sessions);
  }
  const amount = BigInt(transfer.amount);
  // Rule 2: only the sessions due exactly this amount.
  const exact = allInPlay(wallet.byDue.get(amount) ?? [], transfer, pending);
  if (exact.length > 0) return chooseSession(transfer, exact);

  // Rule 3: a top-up can only complete a session that has money: counted when the batch read
  // it, or attributed by the batch since.
  const paidSome = new Set(wallet.partlyPaid);
  for (const id of pending.keys()) {
    const candidate = wallet.byId.get(id);
    if (candidate) paidSome.add(candidate);
  }
  for (const candidate of [...paidSome].sort(byAge)) {
    const seen = inPlay(candidate, transfer, pending);
    if (seen && isUnpaid(seen) && seen.received > 0n && seen.amountDue - seen.received === amount) return seen;
  }

  // Rule 4: a tolerance of t basis points accepts `amount` only for a due amount of at most
  // amount × 10,000 / (10,000 − t), so only due amounts up to that bound for the largest t matter.
  let tolerated: Candidate | undefined;
  let toleratedCount = 0;
  const limit = amount * 10_000n;
  const factor = BigInt(10_000 - wallet.maxToleranceBps);
  for (let i = firstAbove(wallet.dues, amount); i < wallet.dues.length && wallet.dues[i]! * factor <= limit && toleratedCount < 2; i++) {
    for (const candidate of allInPlay(wallet.byDue.get(wallet.dues[i]!)!, transfer, pending)) {
      if (isUnpaid(candidate) && candidate.received === 0n && tolerates(candidate, amount)) {
        tolerated = candidate;
        toleratedCount += 1;
      }
    }
  }
  if (toleratedCount === 1) return tolerated;

  // Rule 5: the only session still waiting for money; a second one settles it, so stop there.
  let sole: Candidate | undefined;
  for (const candidate of wallet.unpaid) {
    const seen = inPlay(candidate, transfer, pending);
    if (!seen || !isUnpaid(seen)) continue;
    if (sole) return undefined;
    sole = seen;
  }
  return chooseSession(transfer, sole ? [sole] : []);
}
