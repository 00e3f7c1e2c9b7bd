import type { Store, Sql } from '../store/index.ts';
import type { ChainConfig } from '../internal/chains.ts';
import type { ChainName } from '../internal/config.ts';
import { ensureReference, expireSooner, lockSession } from '../payments/sessions.ts';
import { payerAddress, type Session } from '../payments/session.ts';
import { badRequest, conflict, notFound } from '../internal/errors.ts';
import { parseAmount, AmountError } from '../internal/money.ts';
import { fakeAddress, fakeBlockHash, fakeTxHash } from '../internal/sandboxIds.ts';
import { simulatedHead, storeSimulatedHead } from '../ingest/simulatedChain.ts';

/**
 * What a sandbox payment simulates, and the events the merchant then receives:
 * - `exact`: the due amount -> confirming, confirmed (settled later).
 * - `underpaid`: half the remaining amount -> confirming, underpaid; the session waits for the rest.
 * - `overpaid`: the remaining amount plus 10% -> confirming, confirmed + overpaid.
 * - `late`: the session expires first, then the due amount arrives -> expired, confirming, late_confirmed.
 * - `reorged`: the due amount arrives, then a reorg removes it before it confirms -> confirming,
 *   then the reorg event, and the session is open again.
 * - `failed`: half the remaining amount arrives and the session expires once it has confirmed
 *   -> confirming, underpaid, failed (reason underpaid).
 * - `expired`: the session expires now with nothing paid -> expired.
 */
export const SANDBOX_OUTCOMES = ['exact', 'underpaid', 'overpaid', 'late', 'reorged', 'failed', 'expired'] as const;
export type SandboxOutcome = (typeof SANDBOX_OUTCOMES)[number];

/** Runs the engine over a simulated chain's stored rows; the real engine's `reconcile`. */
export type Reconcile = (params: { chain: ChainName; livemode: boolean }) => Promise<void>;

export interface SimulatedPayment {
  outcome: SandboxOutcome;
  txHash: string | null;
  amount: bigint;
  blockNumber: bigint | null;
}

const OPEN_STATUSES = ['created', 'pending', 'confirming'];

async function lockSandboxSession(sql: Sql, merchantId: string, sessionId: string): Promise<Session> {
  const session = await lockSession(sql, { merchantId, livemode: false, id: sessionId });
  if (!session) throw notFound(`sandbox session ${sessionId} not found`);
  return session;
}

async function insertTransfer(
  sql: Sql,
  chain: ChainConfig,
  blockMs: number,
  session: Pick<Session, 'id' | 'reference' | 'tokenAddresses' | 'payTo' | 'depositAddress'>,
  amount: bigint,
): Promise<{ txHash: string; blockNumber: bigint }> {
  // The simulated payer names the session by reference, the engine's exact path: an under- or
  // overpayment then reaches its session however many sandbox sessions share the merchant's fake
  // wallet (amount matching alone could not tell them apart, on a real chain either). In
  // `address` mode it pays the session's deposit address, with no reference: the address is the
  // evidence, as on a real chain.
  const reference = session.depositAddress ? null : await ensureReference(sql, session);
  const head = simulatedHead(chain, blockMs, Date.now());
  await storeSimulatedHead(sql, chain.name, head);
  const txHash = fakeTxHash(chain.name);
  await sql.query(
    `INSERT INTO transfers (livemode, chain, tx_hash, log_index, block_number, block_hash, block_time, token_address,
       from_address, to_address, amount, reference_keys)
     VALUES (false, $1, $2, 0, $3, $4, now(), $5, $6, $7, $8::numeric, $9)`,
    [
      chain.name,
      txHash,
      head.head,
      fakeBlockHash(chain.name, head.head),
      session.tokenAddresses[0],
      fakeAddress(chain.name),
      payerAddress(session),
      amount.toString(),
      reference ? [reference] : [],
    ],
  );
  return { txHash, blockNumber: head.head };
}

/**
 * Simulates `outcome` for a sandbox session of `merchantId`: writes simulated transfers (and, for
 * time-based outcomes, moves the session's expiry to now) and runs the real engine, which makes
 * every state change and event exactly as on a real chain.
 * @throws {NotFoundError} for an unknown or live session; {ConflictError} when the session no longer takes payments.
 */
export async function simulatePayment(params: {
  store: Store;
  chains: Record<ChainName, ChainConfig>;
  blockMs: number;
  reconcile: Reconcile;
  merchantId: string;
  sessionId: string;
  outcome: SandboxOutcome;
  /** Decimal text overriding the amount the outcome would send (`exact`, `underpaid`, `overpaid`, `late`, `reorged`). */
  amount?: string | undefined;
}): Promise<SimulatedPayment> {
  const { store, reconcile, outcome } = params;
  const session = await store.transaction((sql) => lockSandboxSession(sql, params.merchantId, params.sessionId));
  const chain = params.chains[session.chain];
  const run = () => reconcile({ chain: session.chain, livemode: false });
  const remaining = session.amountDue > session.amountCounted ? session.amountDue - session.amountCounted : 0n;
  const takesPayments =
    OPEN_STATUSES.includes(session.status) || (outcome !== 'expired' && ['expired', 'failed'].includes(session.status) && session.monitorUntil > new Date());
  if (!takesPayments) throw conflict(`sandbox session ${session.id} is ${session.status} and takes no more simulated payments`);
  if (outcome === 'expired' && session.amountCounted > 0n)
    throw conflict(`sandbox session ${session.id} already received a payment; use "failed" to simulate an underpaid expiry`);

  let amount = {
    exact: remaining,
    late: remaining,
    reorged: remaining,
    underpaid: remaining / 2n,
    failed: remaining / 2n,
    overpaid: remaining + remaining / 10n,
    expired: 0n,
  }[outcome];
  if (params.amount !== undefined) {
    if (outcome === 'expired' || outcome === 'failed') throw badRequest(`amount cannot be given with outcome "${outcome}"`);
    try {
      amount = parseAmount(params.amount, session.decimals);
    } catch (error) {
      if (error instanceof AmountError) throw badRequest(error.message);
      throw error;
    }
    // A simulated payer sends at most ten times what the session asks: enough for any overpayment
    // test, and far from numeric(78,0)'s limit.
    if (amount > session.amountDue * 10n) throw badRequest(`amount may be at most ten times the session's due amount in the sandbox`);
  }
  if (outcome !== 'expired' && amount <= 0n) {
    // Either the caller's own amount is zero, or the outcome's default (what is left) is.
    throw badRequest(
      params.amount !== undefined
        ? 'amount must be greater than zero'
        : `the simulated payment amount must be positive: session ${session.id} has nothing left to pay`,
    );
  }

  if (outcome === 'expired' || outcome === 'late') {
    await store.transaction(async (sql) => {
      await lockSandboxSession(sql, params.merchantId, params.sessionId);
      await expireSooner(sql, session.id, -0.001);
    });
    await run();
    if (outcome === 'expired') return { outcome, txHash: null, amount: 0n, blockNumber: null };
  }

  const paid = await store.transaction(async (sql) => {
    await lockSandboxSession(sql, params.merchantId, params.sessionId);
    const transfer = await insertTransfer(sql, chain, params.blockMs, session, amount);
    if (outcome === 'failed') {
      // Expire once the partial payment has confirmed (the session is then `pending`), so the
      // merchant sees underpaid, then failed; the sandbox tick does it.
      await sql.query('INSERT INTO sandbox_expire_when_pending (session_id) VALUES ($1) ON CONFLICT DO NOTHING', [session.id]);
    }
    return transfer;
  });
  await run();

  if (outcome === 'reorged') {
    await store.query(`UPDATE transfers SET status = 'removed', removed_at = now() WHERE livemode = false AND chain = $1 AND tx_hash = $2`, [
      session.chain,
      paid.txHash,
    ]);
    await run();
  }
  return { outcome, txHash: paid.txHash, amount, blockNumber: paid.blockNumber };
}
