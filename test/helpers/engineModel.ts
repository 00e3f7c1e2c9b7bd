/**
 * A reference model of the engine for the property test: the documented rules
 * (docs/payment-lifecycle.md, "Transitions" and "Matching") written as plainly as possible over
 * in-memory data, with no SQL, no locks and no batching. One merchant, one wallet, one token,
 * tolerance 0, reorgs shallower than the confirmation depth.
 */

export const REQUIRED = 32;

export interface ModelTransfer {
  amount: bigint;
  block: bigint;
  time: number;
  removed: boolean;
  checked: boolean;
  session: number | null;
}

export interface ModelSession {
  due: bigint;
  status: string;
  stored: bigint;
  reported: bigint;
  expiresAt: number;
  expiredBefore: boolean;
  failedBefore: boolean;
  events: string[];
}

export interface Model {
  sessions: ModelSession[];
  transfers: ModelTransfer[];
  head: bigint;
  finalized: bigint | null;
}

const counted = (m: Model, s: number) => m.transfers.filter((t) => t.session === s && !t.removed);
const sum = (list: ModelTransfer[]) => list.reduce((a, t) => a + t.amount, 0n);
const confirmed = (m: Model, t: ModelTransfer) => (m.finalized !== null && t.block <= m.finalized) || m.head - t.block + 1n >= BigInt(REQUIRED);
const settled = (m: Model, t: ModelTransfer) => m.finalized !== null && t.block <= m.finalized;

function match(m: Model, t: ModelTransfer): number | null {
  const received = (s: number) => sum(counted(m, s));
  const all = m.sessions.map((_, i) => i);
  const unpaid = all.filter((i) => !['confirmed', 'settled'].includes(m.sessions[i]!.status) && received(i) < m.sessions[i]!.due);
  const exact = all.filter((i) => m.sessions[i]!.due === t.amount);
  if (exact.length > 0) return exact.find((i) => unpaid.includes(i)) ?? exact[0]!;
  const topUp = unpaid.find((i) => received(i) > 0n && m.sessions[i]!.due - received(i) === t.amount);
  if (topUp !== undefined) return topUp;
  if (unpaid.length === 1 && t.amount <= 2n * (m.sessions[unpaid[0]!]!.due - received(unpaid[0]!))) return unpaid[0]!;
  return null;
}

function settle(m: Model, i: number, now: number): void {
  const s = m.sessions[i]!;
  const list = counted(m, i);
  const received = sum(list);
  const confirmedSum = sum(list.filter((t) => confirmed(m, t)));
  const unconfirmed = list.some((t) => !confirmed(m, t));
  const pastExpiry = s.expiresAt <= now;
  const newest = [...list].sort((a, b) => (a.block === b.block ? 0 : a.block < b.block ? -1 : 1)).at(-1);
  const move = (to: string, ...events: string[]) => {
    s.status = to;
    s.events.push(...events);
    s.stored = received;
    if (to === 'expired') s.expiredBefore = true;
    if (to === 'failed') s.failedBefore = true;
    if (to === 'confirmed') s.reported = confirmedSum;
  };
  for (let guard = 0; guard < 10; guard++) {
    const gained = received > s.stored;
    const lost = received < s.stored;
    const before = s.events.length;
    if (s.status === 'created') {
      if (received > 0n) move('confirming', 'payment.confirming');
      else if (pastExpiry) move('expired', 'payment.expired');
    } else if (s.status === 'pending') {
      if (gained || unconfirmed) move('confirming', 'payment.confirming');
      else if (pastExpiry) move('failed', 'payment.failed');
    } else if (s.status === 'expired' || s.status === 'failed') {
      if (gained) move('confirming', 'payment.confirming');
    } else if (s.status === 'confirming' && !unconfirmed) {
      if (confirmedSum >= s.due) {
        const late = (s.expiredBefore || s.failedBefore) && newest !== undefined && newest.time > s.expiresAt;
        move('confirmed', late ? 'payment.late_confirmed' : 'payment.confirmed', ...(confirmedSum > s.due ? ['payment.overpaid'] : []));
      } else if (lost || received === 0n) {
        move(s.failedBefore ? 'failed' : received === 0n ? (s.expiredBefore ? 'expired' : 'created') : 'pending', 'payment.reorged');
      } else if (s.failedBefore) move('failed', 'payment.underpaid');
      else if (pastExpiry) move('failed', 'payment.failed');
      else move('pending', 'payment.underpaid');
    } else if (s.status === 'confirmed' || s.status === 'settled') {
      if (confirmedSum > s.reported && confirmedSum > s.due) {
        s.events.push('payment.overpaid');
        s.reported = confirmedSum;
      } else if (s.status === 'confirmed' && list.length > 0 && list.every((t) => settled(m, t))) move('settled', 'payment.settled');
    }
    if (s.events.length === before) break;
  }
  s.stored = received;
}

/** What one engine reconcile does, in the model: match new transfers in block order, then settle every session. */
export function reconcileModel(m: Model, now: number): void {
  const pending = m.transfers
    .map((t, index) => ({ t, index }))
    .filter(({ t }) => !t.checked && !t.removed && t.session === null)
    .sort((a, b) => (a.t.block === b.t.block ? a.index - b.index : a.t.block < b.t.block ? -1 : 1));
  for (const { t } of pending) {
    t.session = match(m, t);
    t.checked = true;
  }
  for (let i = 0; i < m.sessions.length; i++) settle(m, i, now);
}
