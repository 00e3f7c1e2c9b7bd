import { getAddress } from 'viem';
import type { ChainConfig } from '../internal/chains.ts';
import type { ChainName, Config } from '../internal/config.ts';
import { GoneError, notFound, UnavailableError } from '../internal/errors.ts';
import { amountRemaining, checkoutViewOf, loadCheckoutSession, type CheckoutSession } from '../checkout/view.ts';
import type { statusOf } from '../checkout/instructions.ts';
import { payerAddress } from '../payments/session.ts';
import type { Store } from '../store/index.ts';
import { REASONS, type Refusal } from './authorization.ts';
import { holdPaymentId } from './paymentId.ts';
import { paymentRequired, requirementsFor, requirementsV1, x402Offer } from './requirements.ts';
import { settleOnce, type SettleContext, type SettleOutcome } from './settle.ts';
import { signatureHash, type Settlement } from './settlements.ts';
import { readPaymentHeader, v1NetworkName, type SettleResponse } from './wire.ts';
import type { SessionAnswer } from './index.ts';
import { svmOffer, type SvmX402 } from './svm/index.ts';

/**
 * The x402 URL of a single-pair session (docs/agents.md): without a payment header the 402
 * challenge for what is left to pay, with one the settlement of exactly that; a Solana session's
 * answer is svm/'s. A session waiting for its customer's choice is choice.ts's.
 */

/** What answering a single-pair session's x402 URL needs of the stage. */
export interface SessionAnswerDeps {
  store: Store;
  ctx: SettleContext;
  chains: Record<ChainName, ChainConfig>;
  /** Read at each answer (the public URL names the resource). */
  config: Pick<Config, 'publicUrl'>;
  svm: Pick<SvmX402, 'session'>;
  /** Why x402 cannot take a session with these terms here (relayer, sandbox, Permit2), or undefined. */
  unavailable(session: Pick<CheckoutSession, 'livemode' | 'chain' | 'tokenAddresses'>): string | undefined;
  /** The session's state as its instructions give it (with its `x402Url`). */
  stateOf(session: CheckoutSession): ReturnType<typeof statusOf>;
}

/** The `PAYMENT-RESPONSE` of a settled payment, its network named as the client's x402 version does. */
export function settleResponse(settlement: Settlement, network: string, version: 1 | 2): SettleResponse {
  return {
    success: true,
    transaction: settlement.txHash!,
    network: version === 1 ? (v1NetworkName(network) ?? network) : network,
    // A Solana payer is a base58 address, an EVM one is checksummed.
    payer: network.startsWith('solana:') ? settlement.payer : getAddress(settlement.payer),
  };
}

/** The session `sessionId` (or `loaded`, already read) when it has an x402 offer on its chain and token; else a 404. */
export async function loadX402Session(
  deps: Pick<SessionAnswerDeps, 'store' | 'chains'>,
  sessionId: string,
  loaded?: CheckoutSession | null,
): Promise<CheckoutSession> {
  const session = loaded ?? (await loadCheckoutSession(deps.store, sessionId));
  if (!session) throw notFound(`no checkout session ${sessionId}`);
  if (!x402Offer(session, deps.chains[session.chain]) && !svmOffer(session, deps.chains[session.chain]))
    throw notFound(`session ${sessionId} has no x402 offer on its chain and token (docs/agents.md)`);
  return session;
}

/** A single-pair session's answer: its 402, its state when nothing is left to pay, or the settlement of the payment sent. */
export async function answerSession(
  deps: SessionAnswerDeps,
  session: CheckoutSession,
  payment: { header: string; version: 1 | 2 } | undefined,
): Promise<SessionAnswer> {
  if (session.chain === 'solana')
    return deps.svm.session(session, payment, { stateOf: deps.stateOf, resourceUrl: `${deps.config.publicUrl}/checkout/${session.id}/x402` });
  const view = checkoutViewOf(session);
  const payable = (view === 'awaiting' || view === 'underpaid' || view === 'detected') && amountRemaining(session) > 0n;
  if (!payment) {
    if (payable) {
      available(deps, session);
      return sessionChallenge(deps, session);
    }
    if (view === 'expired' || view === 'failed') throw new GoneError(`session ${session.id} is ${view}; it cannot be paid any more`);
    return { kind: 'state', session: deps.stateOf(session) };
  }
  const payload = readPaymentHeader(payment.header);
  available(deps, session);
  if (payload.paymentId) await holdPaymentId(deps.store, { merchantId: session.merchantId, paymentId: payload.paymentId, payloadHash: signatureHash(payload) });
  const offer = x402Offer(session, deps.chains[session.chain])!;
  const secondsLeft = (session.expiresAt.getTime() - session.now.getTime()) / 1000;
  const requirements = requirementsFor(offer, { payTo: payerAddress(session), amount: amountRemaining(session), secondsLeft });
  const outcome: SettleOutcome = await settleOnce(deps.ctx, {
    offer,
    requirements,
    payload,
    target: { sessionId: session.id, merchantId: session.merchantId, livemode: session.livemode, source: 'resource' },
    ...(payable ? {} : { refusal: { reason: REASONS.notPayable, message: `session ${session.id} is ${view} and asks for nothing more` } }),
  });
  if (!outcome.ok) return sessionChallenge(deps, session, outcome.refusal);
  const after = (await loadCheckoutSession(deps.store, session.id))!;
  return { kind: 'paid', response: settleResponse(outcome.settlement, offer.network, payment.version), version: payment.version, session: deps.stateOf(after) };
}

/** Throws the 503 naming why x402 cannot take this session here. */
function available(deps: Pick<SessionAnswerDeps, 'unavailable'>, session: CheckoutSession): void {
  const reason = deps.unavailable(session);
  if (reason) throw new UnavailableError(reason);
}

/** An EVM session's 402: the requirements of what is left to pay (none when nothing is), with the refusal of a payload sent, if any. */
export function sessionChallenge(deps: Pick<SessionAnswerDeps, 'chains' | 'config'>, session: CheckoutSession, refusal?: Refusal): SessionAnswer {
  const offer = x402Offer(session, deps.chains[session.chain])!;
  const secondsLeft = (session.expiresAt.getTime() - session.now.getTime()) / 1000;
  const remaining = amountRemaining(session);
  // Nothing left to pay (a refused retry on a paid or expired session): no requirements to sign.
  const accepts = remaining > 0n && secondsLeft > 0 ? [requirementsFor(offer, { payTo: payerAddress(session), amount: remaining, secondsLeft })] : [];
  const resource = {
    url: `${deps.config.publicUrl}/checkout/${session.id}/x402`,
    description: `Payment ${session.id} to ${session.merchantName}${session.livemode ? '' : ' (sandbox: test network, fake token)'}`,
  };
  const error = refusal
    ? `${refusal.reason}: ${refusal.message}`
    : 'payment required: sign the exact authorization in accepts and send it in PAYMENT-SIGNATURE';
  return {
    kind: 'required',
    required: paymentRequired({ ...resource, accepts, error }),
    v1: { x402Version: 1, error, accepts: requirementsV1(accepts, resource) },
    ...(refusal ? { reason: refusal.reason } : {}),
  };
}
