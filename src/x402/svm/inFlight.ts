import type { Store } from '../../store/index.ts';
import type { Logger } from '../../internal/logger.ts';
import { UnavailableError } from '../../internal/errors.ts';
import { sleep } from '../../internal/shutdown.ts';
import { bindSettlementTransaction } from '../bind.ts';
import { LEASE_SECONDS, refused, type SettleOutcome } from '../inFlight.ts';
import type { X402Metrics } from '../metrics.ts';
import { getSettlement, markFinal, markSubmitted, takeOver, type Settlement, type SettlementStatus } from '../settlements.ts';
import type { SignedSvmTransaction, SvmFeePayer } from './feePayer.ts';
import { SVM_REASONS } from './reasons.ts';

/**
 * An SVM settlement in flight (svm/settle.ts inserts its row): recording the signed transaction,
 * sending it, waiting for `confirmed`, and resolving a row a crashed process left behind. The
 * EVM path's states and lease (inFlight.ts); the chain's answers are Solana's: a signature's
 * status instead of a receipt, and a blockhash that expires instead of a nonce that is spent.
 */

export interface SvmSettleContext {
  store: Store;
  logger: Logger;
  metrics: X402Metrics;
  feePayer: SvmFeePayer;
  pollMs: number;
}

/** Longest wait of one request (as on EVM: below the HTTP idle timeout; the retry gets the result). */
const WAIT_MS = 90_000;
/**
 * How often an unlanded transaction is sent again while its blockhash is valid. Leaders drop
 * transactions under load and RPC nodes retry only a while, so senders rebroadcast (Solana's
 * "retrying transactions" guide); the same bytes can land only once.
 */
const REBROADCAST_MS = 2_000;

/** Records the signed transaction, claims it for the session, sends it and waits for it. */
export async function submitSvm(ctx: SvmSettleContext, row: Settlement, signed: SignedSvmTransaction): Promise<SettleOutcome> {
  // Recorded before it is sent (a crash after this rebroadcasts the same bytes, never new ones).
  if (!(await markSubmitted(ctx.store, row.id, { hash: signed.signature, raw: signed.wire }))) {
    return awaitSvmFinal(ctx, (await getSettlement(ctx.store, row.id))!, signed);
  }
  await bindSettlementTransaction(ctx.store, ctx.logger, { sessionId: row.sessionId, chain: 'solana', txHash: signed.signature });
  await ctx.feePayer.broadcast(signed.wire).catch((error) => ctx.logger.warn({ msg: 'x402 solana send failed; will resend', settlement: row.id, err: error }));
  return waitLanded(ctx, (await getSettlement(ctx.store, row.id))!);
}

/** Waits for a `submitted` row's transaction to land (resending it) or its blockhash to expire. */
async function waitLanded(ctx: SvmSettleContext, row: Settlement): Promise<SettleOutcome> {
  const signature = row.txHash!;
  const deadline = Date.now() + WAIT_MS;
  let lastSent = Date.now();
  while (Date.now() < deadline) {
    const status = await ctx.feePayer.status(signature).catch(() => undefined);
    if (status?.landed) {
      if (status.err === null || status.err === undefined) {
        await markFinal(ctx.store, row.id, { status: 'settled' }, ['submitted']);
        await recordSvmBalance(ctx, ctx.feePayer);
        return { ok: true, settlement: (await getSettlement(ctx.store, row.id))!, replayed: false };
      }
      const why = JSON.stringify(status.err, (_, v) => (typeof v === 'bigint' ? String(v) : v));
      return fail(ctx, row, SVM_REASONS.transaction, `the transaction ${signature} failed on chain: ${why}`, ['submitted']);
    }
    // Checked after the status: a transaction that landed in the last valid block is found above.
    const height = await ctx.feePayer.blockHeight().catch(() => undefined);
    if (height !== undefined && height > BigInt(row.validBefore)) {
      const late = await ctx.feePayer.status(signature).catch(() => undefined);
      if (!late?.landed)
        return fail(ctx, row, SVM_REASONS.transaction, 'the transaction did not land before its blockhash expired; nothing moved: sign a new one', [
          'submitted',
        ]);
      continue;
    }
    if (Date.now() - lastSent > REBROADCAST_MS) {
      lastSent = Date.now();
      await ctx.feePayer.broadcast(row.rawTx!).catch(() => {});
    }
    await sleep(ctx.pollMs);
  }
  throw new UnavailableError('the transaction has not landed yet; send the same payment header again to get its result');
}

/**
 * Waits for a row another request (or a crashed process) owns; a row idle past the lease is taken
 * over and resolved here.
 */
export async function awaitSvmFinal(ctx: SvmSettleContext, row: Settlement, signed: SignedSvmTransaction | undefined): Promise<SettleOutcome> {
  const deadline = Date.now() + WAIT_MS;
  let current = row;
  while (Date.now() < deadline) {
    if (current.status === 'settled') return { ok: true, settlement: current, replayed: false };
    if (current.status === 'failed')
      return refused(current.errorReason ?? SVM_REASONS.transaction, `the settlement failed: ${current.errorReason ?? 'unknown'}`);
    if (current.idleSeconds >= LEASE_SECONDS && (await takeOver(ctx.store, current.id, LEASE_SECONDS))) return resolveSvmStale(ctx, current, signed);
    await sleep(ctx.pollMs);
    current = (await getSettlement(ctx.store, current.id))!;
  }
  throw new UnavailableError('the settlement is still in flight; send the same payment header again to get its result');
}

/** Resolves a Solana row left in flight by a process that is gone (the caller took it over). */
export async function resolveSvmStale(ctx: SvmSettleContext, row: Settlement, signed: SignedSvmTransaction | undefined): Promise<SettleOutcome> {
  ctx.logger.warn({ msg: 'x402 solana settlement left in flight; resolving it from the chain', settlement: row.id, status: row.status });
  if (row.status === 'submitted' && row.txHash && row.rawTx) {
    await bindSettlementTransaction(ctx.store, ctx.logger, { sessionId: row.sessionId, chain: 'solana', txHash: row.txHash });
    await ctx.feePayer.broadcast(row.rawTx).catch(() => {});
    return waitLanded(ctx, row);
  }
  // `submitting`: nothing was recorded, so nothing was sent (it is recorded before it is sent).
  if (!signed) return fail(ctx, row, SVM_REASONS.transaction, 'the process settling it stopped before sending; the payer may sign again');
  return submitSvm(ctx, row, signed);
}

/** Fails a row still in one of `from`; when it moved on meanwhile, its own result is awaited. */
async function fail(
  ctx: SvmSettleContext,
  row: Settlement,
  reason: string,
  message: string,
  from: readonly SettlementStatus[] = ['submitting'],
): Promise<SettleOutcome> {
  if (await markFinal(ctx.store, row.id, { status: 'failed', errorReason: reason }, from)) return refused(reason, message);
  const current = (await getSettlement(ctx.store, row.id))!;
  return current.status === 'settled' || current.status === 'failed' ? awaitSvmFinal(ctx, current, undefined) : refused(reason, message);
}

/** Sets the fee payer's SOL gauge (after each settlement and by the gas watch), like the EVM relayers'. */
export async function recordSvmBalance(ctx: Pick<SvmSettleContext, 'metrics' | 'logger'>, feePayer: SvmFeePayer): Promise<void> {
  try {
    const lamports = await feePayer.balance();
    ctx.metrics.relayerGas.set({ chain: 'solana', address: feePayer.address }, Number(lamports) / 1e9);
  } catch (error) {
    ctx.logger.warn({ msg: 'x402 solana fee payer balance unreadable', err: error });
  }
}
