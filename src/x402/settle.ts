import type { Sql } from '../store/index.ts';
import { checkAuthorization, REASONS, type Refusal } from './authorization.ts';
import type { X402Offer } from './requirements.ts';
import { awaitFinal, LEASE_SECONDS, refused, submit, type SettleContext, type SettleOutcome } from './inFlight.ts';
import { countRecentReverts, findSettlement, insertSettlement, signatureHash, type AuthorizationKey, type Settlement } from './settlements.ts';
import type { PaymentPayload, PaymentRequirements } from './wire.ts';
import { permit2OnChain } from './permit2/verify.ts';

/**
 * Settles one signed EIP-3009 authorization exactly once (docs/security.md, "x402"):
 *
 * 1. The same authorization already has a row: answer with that row's result (waiting while it is
 *    in flight), never a second transfer; a different signature over the same nonce, or the same
 *    one for another session, is refused.
 * 2. Otherwise check it (signature, recipient, exact amount, window; then on chain: nonce unused,
 *    balance) and write nothing when it fails.
 * 3. Insert the row (`submitting`): the unique key makes concurrent retries meet here, one wins.
 * 4. Under the chain's relayer lock: sign the relayer transaction, record its hash and raw bytes
 *    (`submitted`), broadcast. Then wait for the receipt: `settled` or `failed`.
 *
 * A row a crashed process left in flight is taken over after {@link LEASE_SECONDS} by whoever
 * asks next (the payer's retry or the recovery pass) and resolved from the chain: the recorded
 * transaction is rebroadcast (same hash) and its receipt awaited; a `submitting` row is submitted
 * only while the token says the authorization is unused.
 */

/**
 * Gas griefing: a payer can sign a valid authorization and then spend its nonce or balance
 * (cancelAuthorization, a transfer) just before the relayer's transaction is mined, which then
 * reverts with the relayer's gas spent. After this many such reverts on a token within
 * {@link REVERT_WINDOW_SECONDS}, that payer's live authorizations are refused before anything is
 * sent (an honest payer practically never loses a race against its own wallet).
 */
export const MAX_PAYER_REVERTS = 3;
export const REVERT_WINDOW_SECONDS = 3600;

/** What a session or a facilitator settle request pays. */
export interface SettleTarget {
  sessionId: string;
  merchantId: string;
  livemode: boolean;
  source: Settlement['source'];
}

/**
 * Checks an authorization, on chain too for live payments, without writing anything: what the
 * facilitator's `/verify` answers and what settling does first.
 */
export async function verifyPayment(
  ctx: Pick<SettleContext, 'relayers'>,
  params: { offer: X402Offer; requirements: PaymentRequirements; payload: PaymentPayload; livemode: boolean },
): Promise<Refusal | undefined> {
  const { offer, payload } = params;
  const local = await checkAuthorization(payload, params.requirements, { chainId: offer.chainId, nowSeconds: Math.floor(Date.now() / 1000) });
  if (local || !params.livemode) return local;
  const relayer = ctx.relayers[offer.chain];
  if (!relayer) return { reason: REASONS.network, message: `this gateway has no relayer on ${offer.chain}` };
  const auth = payload.authorization;
  const chainRefusal = payload.permit2
    ? await permit2OnChain(relayer.permit2, { token: offer.asset, chain: offer.chain, authorization: auth })
    : (await relayer.authorizationUsed(offer.asset, auth.from, auth.nonce))
      ? { reason: REASONS.nonceUsed, message: `nonce ${auth.nonce} of ${auth.from} is already used on the token` }
      : undefined;
  if (chainRefusal) return chainRefusal;
  const balance = await relayer.balanceOf(offer.asset, auth.from);
  if (balance < BigInt(auth.value))
    return { reason: REASONS.balance, message: `${auth.from} holds ${balance} base units; the authorization is for ${auth.value}` };
  return undefined;
}

/**
 * Settles `payload` for `target` exactly once (see the module comment). `prepare` runs in the
 * transaction that inserts the row, before it (the facilitator creates the session there); it
 * returns the session id the row belongs to.
 */
export async function settleOnce(
  ctx: SettleContext,
  params: {
    offer: X402Offer;
    requirements: PaymentRequirements;
    payload: PaymentPayload;
    target: Omit<SettleTarget, 'sessionId'> & { sessionId?: string };
    prepare?: (sql: Sql) => Promise<string>;
    /** Why the target cannot be paid now (a session already paid): refused after the replay lookup, so a retry still gets its result. */
    refusal?: Refusal | undefined;
  },
): Promise<SettleOutcome> {
  const { offer, payload, target } = params;
  const key = { chain: offer.chain, tokenAddress: offer.asset, payer: payload.authorization.from, nonce: payload.authorization.nonce };
  const hash = signatureHash(payload);
  const count = (outcome: string) => ctx.metrics.settlements.inc({ chain: offer.chain, outcome });

  const existing = await findSettlement(ctx.store, key);
  if (existing) return replay(existing);

  const refusal =
    params.refusal ??
    (target.livemode ? await payerRefusal(ctx, key) : undefined) ??
    (await verifyPayment(ctx, { offer, requirements: params.requirements, payload, livemode: target.livemode }));
  if (refusal) {
    count('refused');
    return { ok: false, refusal };
  }
  const lost = new Error('x402: a concurrent request inserted this settlement first');
  const row = await ctx.store
    .transaction(async (sql) => {
      const sessionId = params.prepare ? await params.prepare(sql) : target.sessionId!;
      const inserted = await insertSettlement(sql, {
        ...key,
        livemode: target.livemode,
        signatureHash: hash,
        sessionId,
        merchantId: target.merchantId,
        payTo: params.requirements.payTo,
        amount: BigInt(payload.authorization.value),
        validBefore: payload.authorization.validBefore,
        source: target.source,
        method: offer.method,
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
    // A concurrent retry inserted it first, or another authorization holds this session.
    const raced = await findSettlement(ctx.store, key);
    if (raced) return replay(raced);
    count('refused');
    return refused(REASONS.busy, 'another payment for this session is being settled; fetch the resource again without a payment header to see its state');
  }
  const outcome = await submit(ctx, row, payload);
  count(outcome.ok ? 'settled' : 'failed');
  return outcome;

  async function replay(row: Settlement): Promise<SettleOutcome> {
    if (row.signatureHash !== hash) return refused(REASONS.nonceUsed, `nonce ${key.nonce} of ${key.payer} was already used by another signature`);
    if ((target.sessionId !== undefined && row.sessionId !== target.sessionId) || row.merchantId !== target.merchantId || row.livemode !== target.livemode)
      return refused(REASONS.nonceUsed, 'this authorization was already used to pay another session');
    const outcome = await awaitFinal(ctx, row, payload);
    count('replayed');
    return outcome.ok ? { ...outcome, replayed: true } : outcome;
  }
}

/** Refuses a payer whose recent authorizations made the relayer's transactions revert (see {@link MAX_PAYER_REVERTS}). */
async function payerRefusal(ctx: Pick<SettleContext, 'store'>, key: Omit<AuthorizationKey, 'nonce'>): Promise<Refusal | undefined> {
  const reverts = await countRecentReverts(ctx.store, key, REVERT_WINDOW_SECONDS);
  if (reverts < MAX_PAYER_REVERTS) return undefined;
  return {
    reason: REASONS.payerReverts,
    message: `${key.payer}'s last ${reverts} authorizations on this token were spent elsewhere before the relayer's transaction was mined (it reverted); this gateway does not relay for that payer for an hour`,
  };
}

export { LEASE_SECONDS, recordGas, resolveStale, type SettleContext, type SettleOutcome } from './inFlight.ts';
