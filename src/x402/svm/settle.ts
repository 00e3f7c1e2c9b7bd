import type { Sql } from '../../store/index.ts';
import { sha256Hex } from '../../internal/crypto.ts';
import { REASONS, type Refusal } from '../authorization.ts';
import { findSettlement, findSvmSettlementByMessage, insertSettlement, type AuthorizationKey, type Settlement } from '../settlements.ts';
import type { SettleOutcome, SettleTarget } from '../settle.ts';
import { refused } from '../inFlight.ts';
import { inspectTransaction, signedByPayer } from './inspect.ts';
import type { SvmOffer, SvmRequirements } from './offer.ts';
import type { SvmPaymentPayload } from './payload.ts';
import { SVM_REASONS } from './reasons.ts';
import { awaitSvmFinal, submitSvm, type SvmSettleContext } from './inFlight.ts';

/**
 * Settles one SVM `exact` payment exactly once (docs/security.md, "x402 on Solana"), with the
 * EVM path's rows and states (`x402_settlements`, settlements.ts):
 *
 * 1. Check the payer's transaction (inspect.ts), then add the fee payer's signature: ed25519 is
 *    deterministic, so the transaction's id (its first signature) is a function of the message,
 *    and the row is keyed by it. The same transaction sent again, or five times at once, meets
 *    the same row; a payer re-signing the same message differently changes nothing either.
 * 2. The same transaction already has a row: answer with its result, never a second send.
 * 3. Otherwise simulate the fully signed transaction (balances, the blockhash, the signatures)
 *    and write nothing when it fails.
 * 4. Insert the row: the unique key makes concurrent retries meet here, one wins; the session's
 *    one-settlement index refuses a second transaction for the same session.
 * 5. Record the signed transaction (`submitted`), claim it for the session, send it, and wait for
 *    `confirmed`: `settled`, or `failed` when it failed on chain or its blockhash expired unlanded.
 */

/** A blockhash is valid for 150 blocks after the one it names; one more for the block being built. */
const BLOCKHASH_LIFETIME_BLOCKS = 151n;

/** Checks a payment without writing or sending anything: the settlement's step 1 and 3. */
export async function verifySvmPayment(
  ctx: Pick<SvmSettleContext, 'feePayer'>,
  params: { offer: SvmOffer; requirements: SvmRequirements; payload: SvmPaymentPayload; simulate: boolean },
): Promise<{ refusal: Refusal } | { payer: string; key: AuthorizationKey; messageHash: string; signed: { signature: string; wire: string } }> {
  const { offer, requirements, payload } = params;
  if (payload.scheme !== 'exact')
    return { refusal: { reason: SVM_REASONS.scheme, message: `scheme ${payload.scheme} is not offered; pay with the exact scheme` } };
  if (payload.network !== requirements.network)
    return {
      refusal: { reason: SVM_REASONS.network, message: `the payment is for network ${payload.network}; this resource is paid on ${requirements.network}` },
    };
  if (payload.accepted.asset !== undefined && payload.accepted.asset !== requirements.asset)
    return {
      refusal: {
        reason: SVM_REASONS.mint,
        message: `the payment is for mint ${String(payload.accepted.asset)}; this resource is paid in ${requirements.asset}`,
      },
    };
  const inspected = await inspectTransaction(payload.transaction, { offer, requirements, feePayer: ctx.feePayer.address });
  if ('refusal' in inspected) return inspected;
  const signed = await ctx.feePayer.sign(inspected.transaction);
  const key = { chain: 'solana' as const, tokenAddress: offer.asset, payer: inspected.payer, nonce: signed.signature };
  const messageHash = sha256Hex(Buffer.from(inspected.transaction.messageBytes));
  if (params.simulate) {
    const error = await ctx.feePayer.simulate(signed.wire);
    if (error !== null)
      return {
        refusal: {
          reason: SVM_REASONS.simulation,
          message: `the transaction would fail on chain (${JSON.stringify(error, (_, v) => (typeof v === 'bigint' ? String(v) : v))}); sign a new one`,
        },
      };
  }
  return { payer: inspected.payer, key, messageHash, signed };
}

/**
 * The settlement a payload already has, or undefined: found by its payer and its message's hash,
 * which name the same row as its replay key (the fee payer's deterministic signature of that
 * message). Not by signing it: this payload did not pass inspect.ts, and the fee payer's key signs
 * nothing that did not (one that moves the fee payer's funds would otherwise be signed in memory).
 */
async function settlementOfRetry(ctx: SvmSettleContext, params: { offer: SvmOffer; payload: SvmPaymentPayload }): Promise<Settlement | undefined> {
  const signed = await signedByPayer(params.payload.transaction, ctx.feePayer.address);
  if (!signed) return undefined;
  const messageHash = sha256Hex(Buffer.from(signed.transaction.messageBytes));
  return findSvmSettlementByMessage(ctx.store, { tokenAddress: params.offer.asset, payer: signed.payer, messageHash });
}

/** Settles `payload` for `target` exactly once (see the module comment). */
export async function settleSvmOnce(
  ctx: SvmSettleContext,
  params: {
    offer: SvmOffer;
    requirements: SvmRequirements;
    payload: SvmPaymentPayload;
    target: Omit<SettleTarget, 'sessionId'> & { sessionId?: string };
    /**
     * Runs in the transaction that inserts the row, before it, with the payer (the transfer's
     * authority), and returns the session the row belongs to (the facilitator creates its session there); without it, `target.sessionId`.
     */
    prepare?: (sql: Sql, payer: string) => Promise<string>;
    /** Why the target cannot be paid now: refused after the replay lookup, so a retry still gets its result. */
    refusal?: Refusal | undefined;
  },
): Promise<SettleOutcome> {
  const { target } = params;
  const count = (outcome: string) => ctx.metrics.settlements.inc({ chain: 'solana', outcome });
  const local = await verifySvmPayment(ctx, { ...params, simulate: false });
  if ('refusal' in local) {
    // A retry of a payment already settled for this target no longer fits the requirements of
    // now (the session's money arrived: nothing, or less, is left to pay); it gets its result.
    const settled = await settlementOfRetry(ctx, params);
    if (settled) return replay(settled);
    count('refused');
    return { ok: false, refusal: local.refusal };
  }
  const existing = await findSettlement(ctx.store, local.key);
  if (existing) return replay(existing);

  const checked = params.refusal ? { refusal: params.refusal } : await verifySvmPayment(ctx, { ...params, simulate: true });
  if ('refusal' in checked) {
    count('refused');
    return { ok: false, refusal: checked.refusal };
  }
  const validBefore = (await ctx.feePayer.blockHeight()) + BLOCKHASH_LIFETIME_BLOCKS;
  const lost = new Error('x402: a concurrent request inserted this settlement first');
  const row = await ctx.store
    .transaction(async (sql) => {
      const sessionId = params.prepare ? await params.prepare(sql, local.payer) : target.sessionId!;
      const inserted = await insertSettlement(sql, {
        ...local.key,
        livemode: target.livemode,
        signatureHash: local.messageHash,
        sessionId,
        merchantId: target.merchantId,
        payTo: params.requirements.payTo,
        amount: BigInt(params.requirements.amount),
        validBefore: validBefore.toString(),
        source: target.source,
        method: 'svm',
      });
      // Lost the race: roll back what `prepare` wrote (the facilitator's session), keep nothing.
      if (!inserted && params.prepare) throw lost;
      return inserted;
    })
    .catch((error) => {
      if (error === lost) return undefined;
      throw error;
    });
  if (!row) {
    const raced = await findSettlement(ctx.store, local.key);
    if (raced) return replay(raced);
    count('refused');
    return refused(REASONS.busy, 'another payment for this session is being settled; fetch the resource again without a payment header to see its state');
  }
  const outcome = await submitSvm(ctx, row, local.signed);
  count(outcome.ok ? 'settled' : 'failed');
  return outcome;

  async function replay(row: Settlement): Promise<SettleOutcome> {
    if ((target.sessionId !== undefined && row.sessionId !== target.sessionId) || row.merchantId !== target.merchantId || row.livemode !== target.livemode)
      return refused(SVM_REASONS.transactionUsed, 'this transaction was already used to pay another session');
    const outcome = await awaitSvmFinal(ctx, row, 'signed' in local ? local.signed : undefined);
    count('replayed');
    return outcome.ok ? { ...outcome, replayed: true } : outcome;
  }
}
