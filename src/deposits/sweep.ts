import type { Hex, TransactionReceipt } from 'viem';
import type { Store } from '../store/index.ts';
import type { Logger } from '../internal/logger.ts';
import { newId } from '../internal/crypto.ts';
import { InvalidRequestError, RetryableError, UnavailableError } from '../internal/errors.ts';
import { sleep } from '../internal/shutdown.ts';
import { withRelayerLock } from '../store/relayerLock.ts';
import { DEPOSIT_FACTORY_ADDRESS } from '../internal/depositAddress.ts';
import { itemOutcomes, sweepCalldata, sweepItems, type SweepDeposit } from './calldata.ts';
import type { DepositSender } from './sender.ts';
import { getSweep, insertSweep, markDropped, markMined, markUnmined, sweepsInFlight, sweepsSince, type SweepRecord } from './sweeps.ts';

/**
 * Sweeps deposit addresses exactly once (docs/deposit-addresses.md, "Sweeping"):
 *
 * 1. Sweeps this chain left in flight (`sent`) are resolved first, and mined ones a reorg may
 *    have undone are checked again.
 * 2. Under the chain's relayer lock (shared with x402, one nonce sequence): refuse while another
 *    sweep is in flight, sign the factory call (the node's gas estimate simulates it), record the
 *    transaction's hash and raw bytes with its items (`sent`), broadcast.
 * 3. Wait for the receipt: `mined` with each item's outcome from the factory's events, or
 *    `reverted`.
 *
 * A crash after step 2's record is resolved from the chain by whoever runs next: the recorded
 * bytes are rebroadcast (same hash) and the receipt awaited; when the account's nonce moved past
 * it without a receipt, the sweep is `dropped` and its deposits wait for the next one. A sweep is
 * never signed twice for one record, and a second sweep of an already swept address moves 0.
 */

export interface SweepContext {
  store: Store;
  logger: Logger;
  sender: DepositSender;
  livemode: boolean;
  /** Blocks after which a mined sweep is taken as final (the chain's confirmation rule). */
  confirmations: number;
  /** How often a wait polls the receipt (default 1 s). */
  pollMs?: number;
  /** Longest wait for a receipt before answering "still in flight" (default 120 s). */
  waitMs?: number;
}

/** The most deposit addresses one sweep covers: bounded by gas (about 60k each on a fresh address; docs/deposit-addresses.md). */
export const MAX_DEPOSITS_PER_SWEEP = 200;

/** Sweeps `deposits` in one transaction and waits for its receipt (see the module comment). */
export async function sweepDeposits(ctx: SweepContext, deposits: readonly SweepDeposit[]): Promise<SweepRecord> {
  await recoverSweeps(ctx);
  const id = await recordSweep(ctx, deposits, { broadcast: true });
  return waitResolved(ctx, id);
}

/**
 * Steps 2 of {@link sweepDeposits}: signs, records and (with `broadcast`) sends one sweep; returns
 * its id. Without `broadcast` it stops where a process that dies right after recording would.
 */
export async function recordSweep(ctx: SweepContext, deposits: readonly SweepDeposit[], options: { broadcast: boolean }): Promise<string> {
  if (deposits.length === 0) throw new InvalidRequestError('nothing to sweep: no deposit addresses given');
  if (deposits.length > MAX_DEPOSITS_PER_SWEEP) throw new InvalidRequestError(`at most ${MAX_DEPOSITS_PER_SWEEP} deposit addresses per sweep`);
  if (deposits.some((deposit) => deposit.tokens.length === 0)) throw new InvalidRequestError('every deposit address needs at least one token to flush');
  const items = sweepItems(deposits);
  const seen = new Set<string>();
  for (const item of items) {
    const key = `${item.depositAddress}:${item.token}`;
    if (seen.has(key)) throw new InvalidRequestError(`${item.depositAddress} is listed twice with token ${item.token}`);
    seen.add(key);
  }
  const { sender } = ctx;
  const id = newId('dsw');
  await withRelayerLock(ctx.store, sender.chain, async () => {
    if ((await sweepsInFlight(ctx.store, sender.chain)).length > 0) throw new RetryableError(`a sweep on ${sender.chain} is in flight; it is resolved first`);
    const signed = await sender.sign({ to: DEPOSIT_FACTORY_ADDRESS, data: sweepCalldata(deposits) });
    await ctx.store.transaction((sql) =>
      insertSweep(
        sql,
        { id, chain: sender.chain, livemode: ctx.livemode, sender: sender.address, nonce: signed.nonce, txHash: signed.hash, rawTx: signed.raw },
        items,
      ),
    );
    if (!options.broadcast) return;
    try {
      await sender.broadcast(signed.raw);
    } catch (error) {
      // Recorded: the wait (or the next recovery) rebroadcasts the same bytes.
      ctx.logger.warn({ msg: 'deposit sweep broadcast failed; will rebroadcast', sweep: id, chain: sender.chain, err: error });
    }
  });
  ctx.logger.info({ msg: 'deposit sweep sent', sweep: id, chain: sender.chain, deposits: deposits.length });
  return id;
}

/**
 * Resolves what a crash (or a reorg) may have left: every `sent` sweep of the chain is
 * rebroadcast and awaited, or dropped when its nonce went to another transaction; every mined
 * sweep younger than the confirmation rule is checked against the chain again.
 * @returns the sweeps it resolved.
 */
export async function recoverSweeps(ctx: SweepContext): Promise<SweepRecord[]> {
  await recheckRecent(ctx);
  const resolved: SweepRecord[] = [];
  for (const sweep of await sweepsInFlight(ctx.store, ctx.sender.chain)) {
    ctx.logger.warn({ msg: 'deposit sweep left in flight; resolving it from the chain', sweep: sweep.id, chain: sweep.chain, tx_hash: sweep.txHash });
    resolved.push(await waitResolved(ctx, sweep.id));
  }
  return resolved;
}

/** Waits until a sweep is no longer `sent`, rebroadcasting its bytes every 10 s. */
async function waitResolved(ctx: SweepContext, id: string): Promise<SweepRecord> {
  const deadline = Date.now() + (ctx.waitMs ?? 120_000);
  let lastBroadcast = 0;
  for (;;) {
    const sweep = (await getSweep(ctx.store, id))!;
    if (sweep.status !== 'sent') return sweep;
    const receipt = await ctx.sender.receipt(sweep.txHash as Hex);
    if (receipt) {
      await recordReceipt(ctx, sweep, receipt);
      continue;
    }
    // Mined nonce first, then the receipt again: a nonce consumed without our receipt is another transaction's.
    if ((await ctx.sender.minedNonce()) > sweep.nonce && !(await ctx.sender.receipt(sweep.txHash as Hex))) {
      await markDropped(ctx.store, id, `nonce ${sweep.nonce} was used by another transaction of ${sweep.sender}`);
      ctx.logger.warn({ msg: 'deposit sweep dropped: its nonce was used by another transaction', sweep: id, chain: sweep.chain });
      continue;
    }
    if (Date.now() - lastBroadcast > 10_000) {
      lastBroadcast = Date.now();
      await ctx.sender.broadcast(sweep.rawTx as Hex).catch((error) => ctx.logger.warn({ msg: 'deposit sweep rebroadcast failed', sweep: id, err: error }));
    }
    if (Date.now() > deadline) throw new UnavailableError(`deposit sweep ${id} (${sweep.txHash}) is not mined yet; run the sweep again to resume waiting`);
    await sleep(ctx.pollMs ?? 1000);
  }
}

async function recordReceipt(ctx: SweepContext, sweep: SweepRecord, receipt: TransactionReceipt): Promise<void> {
  const mined = receipt.status === 'success';
  const outcomes = mined
    ? itemOutcomes(sweep.items, receipt.logs)
    : sweep.items.map((item) => ({ position: item.position, token: item.token, outcome: 'failed' as const, amount: null }));
  await ctx.store.transaction((sql) =>
    markMined(
      sql,
      sweep.id,
      {
        status: mined ? 'mined' : 'reverted',
        blockNumber: receipt.blockNumber,
        blockHash: receipt.blockHash,
        gasUsed: receipt.gasUsed,
        gasPrice: receipt.effectiveGasPrice,
      },
      outcomes,
    ),
  );
  const failed = outcomes.filter((outcome) => outcome.outcome === 'failed').length;
  ctx.logger.info({ msg: 'deposit sweep mined', sweep: sweep.id, chain: sweep.chain, status: mined ? 'mined' : 'reverted', gas_used: receipt.gasUsed, failed });
}

/** Mined sweeps within the confirmation rule: a receipt gone is a reorg (back to `sent`), one in another block is recorded again. */
async function recheckRecent(ctx: SweepContext): Promise<void> {
  const head = await ctx.sender.client.getBlockNumber({ cacheTime: 0 });
  const from = head > BigInt(ctx.confirmations) ? head - BigInt(ctx.confirmations) : 0n;
  for (const sweep of await sweepsSince(ctx.store, ctx.sender.chain, from)) {
    const receipt = await ctx.sender.receipt(sweep.txHash as Hex);
    if (!receipt) {
      ctx.logger.warn({ msg: 'deposit sweep un-mined by a reorg; it will be rebroadcast', sweep: sweep.id, chain: sweep.chain });
      await ctx.store.transaction((sql) => markUnmined(sql, sweep.id));
    } else if (receipt.blockHash !== sweep.blockHash) {
      await recordReceipt(ctx, sweep, receipt);
    }
  }
}

/** Re-exported for callers that build sweeps. */
export type { SweepDeposit } from './calldata.ts';
