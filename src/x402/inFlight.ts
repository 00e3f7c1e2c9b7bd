import { formatEther, type Hex } from 'viem';
import type { Store } from '../store/index.ts';
import type { Logger } from '../internal/logger.ts';
import { UnavailableError } from '../internal/errors.ts';
import { sleep } from '../internal/shutdown.ts';
import { withRelayerLock } from '../store/relayerLock.ts';
import type { Sandbox } from '../sandbox/index.ts';
import { REASONS, type Refusal } from './authorization.ts';
import type { Relayer } from './relayer.ts';
import type { X402Metrics } from './metrics.ts';
import { bindSettlementTransaction } from './bind.ts';
import { getSettlement, markFinal, markSubmitted, takeOver, type Settlement, type SettlementStatus } from './settlements.ts';
import type { PaymentPayload } from './wire.ts';
import { permit2RevertReason } from './permit2/relayer.ts';

/**
 * A settlement in flight (settle.ts inserts its row): sending the relayer's transaction under the
 * relayer lock, waiting for it to be mined, finding the transaction that used the authorization
 * when someone else got it mined first, and resolving a row a crashed process left behind.
 */

/** An in-flight row untouched this long belongs to a process that is gone. */
export const LEASE_SECONDS = 30;
/**
 * Longest wait of a request for a settlement to be mined (its own or a concurrent retry's): below
 * the HTTP idle timeout (SVC_HTTP_IDLE_TIMEOUT_MS, 120 s by default), so the payer gets a 503 to
 * retry instead of a cut connection. The retry then answers with the same settlement.
 */
const WAIT_MS = 90_000;

export interface SettleContext {
  store: Store;
  logger: Logger;
  metrics: X402Metrics;
  relayers: Partial<Record<string, Relayer>>;
  sandbox?: Sandbox | undefined;
  /** How often a waiting request looks at the row and the chain. */
  pollMs: number;
}

export type SettleOutcome = { ok: true; settlement: Settlement; replayed: boolean } | { ok: false; refusal: Refusal };

export function refused(reason: string, message: string): SettleOutcome {
  return { ok: false, refusal: { reason, message } };
}

/** Sends a `submitting` row's authorization (the relayer's, or the sandbox's simulated one) and waits for it to be mined. */
export async function submit(ctx: SettleContext, row: Settlement, payload: PaymentPayload): Promise<SettleOutcome> {
  if (!row.livemode) return settleInSandbox(ctx, row);
  const relayer = ctx.relayers[row.chain];
  if (!relayer) return fail(ctx, row, REASONS.network, `this gateway has no relayer on ${row.chain}`);
  let sent: { hash: Hex; raw: Hex } | undefined;
  try {
    await withRelayerLock(ctx.store, row.chain, async () => {
      const signed = payload.permit2
        ? await relayer.permit2.sign(payload.authorization, payload.permit2, payload.signature)
        : await relayer.sign(row.tokenAddress, payload.authorization, payload.signature);
      // Recorded only if the row is still ours to send (a process taking over a stale row may have sent it).
      if (!(await markSubmitted(ctx.store, row.id, signed))) return;
      sent = signed;
      await bindSettlementTransaction(ctx.store, ctx.logger, { sessionId: row.sessionId, chain: row.chain, txHash: signed.hash });
      await relayer.broadcast(signed.raw);
    });
  } catch (error) {
    // The gas estimate simulates the call: a revert means the token refuses it (nonce used,
    // expired, balance gone). Nothing was sent, so the row fails and frees the session.
    if (!sent) {
      const reason = revertReason(error);
      ctx.logger.warn({ msg: 'x402 settlement refused by the token', settlement: row.id, chain: row.chain, reason: reason.reason });
      return fail(ctx, row, reason.reason, reason.message);
    }
    // Broadcast failed after the hash was recorded: wait and rebroadcast below.
    ctx.logger.warn({ msg: 'x402 broadcast failed; will rebroadcast', settlement: row.id, chain: row.chain, err: error });
  }
  if (!sent) return awaitFinal(ctx, (await getSettlement(ctx.store, row.id))!, payload);
  return waitMined(ctx, row, relayer, sent);
}

/** Waits for the recorded relayer transaction's receipt, rebroadcasting it now and then (same bytes, same hash). */
async function waitMined(ctx: SettleContext, row: Settlement, relayer: Relayer, tx: { hash: Hex; raw: Hex }): Promise<SettleOutcome> {
  const { hash } = tx;
  const deadline = Date.now() + WAIT_MS;
  let lastBroadcast = Date.now();
  while (Date.now() < deadline) {
    const receipt = await relayer.receipt(hash).catch(() => null);
    if (receipt) {
      if (receipt.status === 'success') {
        await markFinal(ctx.store, row.id, { status: 'settled' }, ['submitted']);
        await recordGas(ctx, relayer);
        return { ok: true, settlement: (await getSettlement(ctx.store, row.id))!, replayed: false };
      }
      // Someone else may have sent the very same authorization first (it is permissionless): the
      // payment then happened in their transaction, and the payer is answered with it.
      const paid = await paidByAnother(ctx, row, relayer, receipt.blockNumber);
      if (paid) return paid;
      return fail(ctx, row, REASONS.transaction, `the transfer ${hash} reverted`, ['submitted']);
    }
    if (Date.now() - lastBroadcast > 10_000) {
      lastBroadcast = Date.now();
      await relayer.broadcast(tx.raw).catch(() => {});
    }
    await sleep(ctx.pollMs);
  }
  throw new UnavailableError('the transfer is not mined yet; send the same payment header again to get its result');
}

/**
 * After the relayer's transaction reverted: when the authorization was used by another
 * transaction that moved exactly the settled value from the payer to the session's wallet (the
 * same signed authorization submitted by someone else first), the settlement is that
 * transaction's, claimed for the session like the relayer's own. Otherwise undefined (a revert:
 * the payer spent its nonce or balance elsewhere).
 */
async function paidByAnother(ctx: SettleContext, row: Settlement, relayer: Relayer, atBlock: bigint): Promise<SettleOutcome | undefined> {
  const lookup =
    row.method === 'permit2'
      ? relayer.permit2.usedBy(row.tokenAddress, row.payer, row.nonce, row.payTo, atBlock)
      : relayer.authorizationUsedBy(row.tokenAddress, row.payer, row.nonce, atBlock);
  const used = await lookup.catch((error) => {
    ctx.logger.warn({ msg: 'x402: the transaction that used a reverted authorization could not be read', settlement: row.id, err: error });
    return null;
  });
  const paying = used?.transfers.some(
    (transfer) =>
      transfer.from.toLowerCase() === row.payer.toLowerCase() && transfer.to.toLowerCase() === row.payTo.toLowerCase() && transfer.value === row.amount,
  );
  if (!used || !paying) return undefined;
  // Refused (its amount is another open session's due amount, or it is claimed by another
  // session): not this session's payment, so the settlement fails like any other revert.
  if (!(await bindSettlementTransaction(ctx.store, ctx.logger, { sessionId: row.sessionId, chain: row.chain, txHash: used.hash, submittedBy: 'another' }))) {
    return undefined;
  }
  if (!(await markFinal(ctx.store, row.id, { status: 'settled', txHash: used.hash }, ['submitted']))) return undefined;
  ctx.logger.info({ msg: 'x402 authorization was submitted by another sender first; settled with its transaction', settlement: row.id, tx_hash: used.hash });
  return { ok: true, settlement: (await getSettlement(ctx.store, row.id))!, replayed: false };
}

/**
 * Waits for a row another request (or a crashed process) owns. A row idle past the lease is
 * taken over and resolved here: its recorded transaction rebroadcast and awaited, or, when
 * nothing was recorded and the token says the authorization is unused, submitted.
 */
export async function awaitFinal(ctx: SettleContext, row: Settlement, payload: PaymentPayload | undefined): Promise<SettleOutcome> {
  const deadline = Date.now() + WAIT_MS;
  let current = row;
  while (Date.now() < deadline) {
    if (current.status === 'settled') return { ok: true, settlement: current, replayed: false };
    if (current.status === 'failed') return refused(current.errorReason ?? REASONS.transaction, `the settlement failed: ${current.errorReason ?? 'unknown'}`);
    if (current.idleSeconds >= LEASE_SECONDS && (await takeOver(ctx.store, current.id, LEASE_SECONDS))) return resolveStale(ctx, current, payload);
    await sleep(ctx.pollMs);
    current = (await getSettlement(ctx.store, current.id))!;
  }
  throw new UnavailableError('the settlement is still in flight; send the same payment header again to get its result');
}

/** Resolves a row left in flight by a process that is gone (the caller took it over). */
export async function resolveStale(ctx: SettleContext, row: Settlement, payload: PaymentPayload | undefined): Promise<SettleOutcome> {
  ctx.logger.warn({ msg: 'x402 settlement left in flight; resolving it from the chain', settlement: row.id, chain: row.chain, status: row.status });
  if (!row.livemode) return settleInSandbox(ctx, row);
  const relayer = ctx.relayers[row.chain];
  if (!relayer) return refused(REASONS.network, `this gateway has no relayer on ${row.chain}`);
  if (row.status === 'submitted' && row.txHash) {
    await bindSettlementTransaction(ctx.store, ctx.logger, { sessionId: row.sessionId, chain: row.chain, txHash: row.txHash });
    const tx = { hash: row.txHash as Hex, raw: row.rawTx as Hex };
    await relayer.broadcast(tx.raw).catch(() => {});
    return waitMined(ctx, row, relayer, tx);
  }
  // `submitting`: nothing was recorded, so this gateway sent nothing (it records before it sends).
  const spent = row.method === 'permit2' ? relayer.permit2.nonceUsed(row.payer, row.nonce) : relayer.authorizationUsed(row.tokenAddress, row.payer, row.nonce);
  if (await spent) return fail(ctx, row, REASONS.nonceUsed, 'the authorization was used on chain by someone else before this gateway sent it');
  if (!payload) return fail(ctx, row, REASONS.transaction, 'the process settling it stopped before sending; the payer may sign again');
  return submit(ctx, row, payload);
}

async function settleInSandbox(ctx: SettleContext, row: Settlement): Promise<SettleOutcome> {
  if (!ctx.sandbox) return fail(ctx, row, REASONS.network, 'the sandbox does not run in this process');
  // No chain and no relayer: the sandbox's simulated transfer of the due amount, through the same engine.
  const payment = await ctx.sandbox.pay({ merchantId: row.merchantId, sessionId: row.sessionId, outcome: 'exact' });
  await markFinal(ctx.store, row.id, { status: 'settled', txHash: payment.txHash ?? undefined });
  return { ok: true, settlement: (await getSettlement(ctx.store, row.id))!, replayed: false };
}

/**
 * Fails a row that is still in one of `from` (by default `submitting`: nothing was sent). When it
 * moved on meanwhile (another process took it over and sent it), its own result is awaited instead.
 */
async function fail(
  ctx: SettleContext,
  row: Settlement,
  reason: string,
  message: string,
  from: readonly SettlementStatus[] = ['submitting'],
): Promise<SettleOutcome> {
  if (await markFinal(ctx.store, row.id, { status: 'failed', errorReason: reason }, from)) return refused(reason, message);
  const current = (await getSettlement(ctx.store, row.id))!;
  return current.status === 'settled' || current.status === 'failed' ? awaitFinal(ctx, current, undefined) : refused(reason, message);
}

/** The token's revert reason (FiatToken's messages) as an x402 reason. */
function revertReason(error: unknown): Refusal {
  const text = String((error as Error)?.message ?? error);
  const permit2 = permit2RevertReason(text);
  if (permit2) return permit2;
  if (/used or canceled/i.test(text)) return { reason: REASONS.nonceUsed, message: 'the token says this authorization is already used' };
  if (/is expired/i.test(text)) return { reason: REASONS.expired, message: 'the token says this authorization expired' };
  if (/not yet valid/i.test(text)) return { reason: REASONS.notYetValid, message: 'the token says this authorization is not valid yet' };
  if (/invalid signature/i.test(text)) return { reason: REASONS.signature, message: 'the token refused the signature' };
  if (/exceeds balance|insufficient/i.test(text)) return { reason: REASONS.balance, message: "the payer's balance no longer covers it" };
  return { reason: REASONS.transaction, message: 'the relayer could not submit the transfer; sign again later' };
}

/** Sets the relayer gas gauge (after each settlement and by the gas watch). */
export async function recordGas(ctx: Pick<SettleContext, 'metrics' | 'logger'>, relayer: Relayer): Promise<void> {
  try {
    const wei = await relayer.gasBalance();
    ctx.metrics.relayerGas.set({ chain: relayer.chain, address: relayer.address }, Number(formatEther(wei)));
  } catch (error) {
    ctx.logger.warn({ msg: 'x402 relayer balance unreadable', chain: relayer.chain, err: error });
  }
}
