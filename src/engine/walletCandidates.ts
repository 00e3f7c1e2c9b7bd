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
   * What the batch has attributed to each candidate so far (by session id), recorded with
   * {@link attributeOnWallet}: added to `received` wherever a rule reads a candidate.
   */
  pending: Map<string, bigint>;
  /**
   * Rule 3: the candidates with money (counted when read, or attributed by the batch) still
   * waiting for more, by what they still miss, each list oldest first. Kept current as the batch
   * attributes money, so a top-up is one lookup rather than a pass over every session paid so far.
   */
  topUps: Map<bigint, Candidate[]>;
  /**
   * Rule 5: the candidates still waiting for money, oldest first. A candidate leaves the list once
   * the batch's attributions pay it (money only adds, so it never comes back): the rule stops at
   * the second one in play instead of walking past every session the batch paid (a backfill paying
   * the oldest thousand sessions of a wallet made that walk most of the matching time).
   */
  unpaid: Candidate[];
  merchants: Set<string>;
  /** The largest payment tolerance among the candidates: bounds rule 4's range of due amounts. */
  maxToleranceBps: number;
}

/** Inserts `candidate` into `list` (oldest first) at its place by age. */
function insertByAge(list: Candidate[], candidate: Candidate): void {
  let at = list.length;
  while (at > 0 && byAge(list[at - 1]!, candidate) > 0) at -= 1;
  list.splice(at, 0, candidate);
}

function removeFrom(list: Candidate[] | undefined, candidate: Candidate): void {
  const at = list ? list.indexOf(candidate) : -1;
  if (at >= 0) list!.splice(at, 1);
}

/** `candidate` with what the batch attributed to it added to `received`. */
function withPending(wallet: WalletSessions, candidate: Candidate): Candidate {
  const attributed = wallet.pending.get(candidate.id);
  return attributed === undefined ? candidate : { ...candidate, received: candidate.received + attributed };
}

function addTopUp(wallet: WalletSessions, candidate: Candidate, seen: Candidate): void {
  const missing = seen.amountDue - seen.received;
  const list = wallet.topUps.get(missing);
  if (list) insertByAge(list, candidate);
  else wallet.topUps.set(missing, [candidate]);
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
      wallet = {
        all: [],
        byId: new Map(),
        byDue: new Map(),
        dues: [],
        pending: new Map(),
        topUps: new Map(),
        unpaid: [],
        merchants: new Set(),
        maxToleranceBps: 0,
      };
      byWallet.set(candidate.payTo, wallet);
    }
    wallet.all.push(candidate);
    wallet.byId.set(candidate.id, candidate);
    wallet.merchants.add(candidate.merchantId);
    wallet.maxToleranceBps = Math.max(wallet.maxToleranceBps, candidate.toleranceBps);
    if (isUnpaid(candidate)) {
      wallet.unpaid.push(candidate);
      if (candidate.received > 0n) addTopUp(wallet, candidate, candidate);
    }
    const sameDue = wallet.byDue.get(candidate.amountDue);
    if (sameDue) sameDue.push(candidate);
    else wallet.byDue.set(candidate.amountDue, [candidate]);
  }
  for (const wallet of byWallet.values()) wallet.dues = [...wallet.byDue.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return byWallet;
}

/**
 * Records that the batch attributed `amount` to session `id` (a no-op when it is not one of the
 * wallet's candidates): later transfers see it in the session's `received`, and the rule 3 and
 * rule 5 lists follow.
 */
export function attributeOnWallet(wallet: WalletSessions, id: string, amount: bigint): void {
  const candidate = wallet.byId.get(id);
  if (!candidate) return;
  const before = withPending(wallet, candidate);
  if (isUnpaid(before) && before.received > 0n) removeFrom(wallet.topUps.get(before.amountDue - before.received), candidate);
  wallet.pending.set(id, (wallet.pending.get(id) ?? 0n) + amount);
  const after = withPending(wallet, candidate);
  if (!isUnpaid(after)) removeFrom(wallet.unpaid, candidate);
  else if (after.received > 0n) addTopUp(wallet, candidate, after);
}

/**
 * `candidate` as `transfer` sees it: undefined when the token or the payment time rules it out,
 * otherwise with what the batch has already attributed to it added to `received`.
 */
function inPlay(wallet: WalletSessions, candidate: Candidate, transfer: TransferToMatch): Candidate | undefined {
  if (!candidate.tokenAddresses.includes(transfer.token_address) || !inWindow(candidate, transfer.paid_at)) return undefined;
  return withPending(wallet, candidate);
}

function allInPlay(wallet: WalletSessions, list: Candidate[], transfer: TransferToMatch): Candidate[] {
  const out: Candidate[] = [];
  for (const candidate of list) {
    const seen = inPlay(wallet, candidate, transfer);
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
 * attributed ({@link attributeOnWallet}): exactly `chooseSession` over the wallet's sessions in
 * play (right token, payment time in their window), and nothing when those belong to two
 * merchants (the amount cannot say whose money it is; a verified owner attributes it by hand).
 * The index holds only the sessions amount matching may pay, so on an address one merchant
 * verified the others' sessions are not there (the verified owner wins, `amountMatchable`).
 * Each rule reads only the sessions it can pick (test/engine/walletCandidates.test.ts checks
 * the equivalence on random wallets and random sequences of attributions).
 */
export function chooseOnWallet(wallet: WalletSessions, transfer: TransferToMatch): Candidate | undefined {
  if (wallet.merchants.size > 1) {
    const sessions = allInPlay(wallet, wallet.all, transfer);
    if (new Set(sessions.map((candidate) => candidate.merchantId)).size > 1) return undefined;
    return chooseSession(transfer, sessions);
  }
  const amount = BigInt(transfer.amount);
  // Rule 2: only the sessions due exactly this amount.
  const exact = allInPlay(wallet, wallet.byDue.get(amount) ?? [], transfer);
  if (exact.length > 0) return chooseSession(transfer, exact);

  // Rule 3: the oldest session in play with money that misses exactly this amount.
  for (const candidate of wallet.topUps.get(amount) ?? []) {
    const seen = inPlay(wallet, candidate, transfer);
    if (seen) return seen;
  }

  // Rule 4: a tolerance of t basis points accepts `amount` only for a due amount of at most
  // amount × 10,000 / (10,000 − t), so only due amounts up to that bound for the largest t matter.
  let tolerated: Candidate | undefined;
  let toleratedCount = 0;
  const limit = amount * 10_000n;
  const factor = BigInt(10_000 - wallet.maxToleranceBps);
  for (let i = firstAbove(wallet.dues, amount); i < wallet.dues.length && wallet.dues[i]! * factor <= limit && toleratedCount < 2; i++) {
    for (const candidate of allInPlay(wallet, wallet.byDue.get(wallet.dues[i]!)!, transfer)) {
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
    const seen = inPlay(wallet, candidate, transfer);
    if (!seen || !isUnpaid(seen)) continue;
    if (sole) return undefined;
    sole = seen;
  }
  return chooseSession(transfer, sole ? [sole] : []);
}
