import type { Registry } from 'prom-client';
import type { Store } from '../../store/index.ts';
import type { Logger } from '../../internal/logger.ts';
import type { ChainConfig } from '../../internal/chains.ts';
import type { Config } from '../../internal/config.ts';
import { GoneError, UnavailableError } from '../../internal/errors.ts';
import { createIngestMetrics } from '../../ingest/metrics.ts';
import { createSolanaRpcPool } from '../../ingest/solana/rpc.ts';
import { amountRemaining, checkoutViewOf, loadCheckoutSession, type CheckoutSession } from '../../checkout/view.ts';
import { REASONS, type Refusal } from '../authorization.ts';
import type { X402Metrics } from '../metrics.ts';
import type { Settlement } from '../settlements.ts';
import type { SessionAnswer } from '../index.ts';
import { createSvmFeePayer, type SvmFeePayer } from './feePayer.ts';
import { recordSvmBalance, resolveSvmStale, type SvmSettleContext } from './inFlight.ts';
import { svmOffer, svmRequirements, type SvmOffer, type SvmRequirements } from './offer.ts';
import type { SettleOutcome } from '../inFlight.ts';
import { readSvmPaymentHeader, svmPayloadHash } from './payload.ts';
import { settleSvmOnce } from './settle.ts';
import { holdPaymentId, paymentIdentifierDeclaration } from '../paymentId.ts';
import type { Sql } from '../../store/index.ts';
import type { FacilitatorRequest, FacilitatorSessionTerms } from '../facilitator.ts';
import type { SettleResponse } from '../wire.ts';
import { settleSvmFacilitator, svmSupportedKind, verifySvmFacilitator } from './facilitator.ts';

export { svmOffer } from './offer.ts';
export { paymentResourceUrl } from './payload.ts';

/**
 * x402's `exact` scheme on Solana for sessions' x402 URLs (docs/agents.md, "Solana"): the 402's
 * requirements name this gateway's fee payer, the payer's partially signed TransferChecked is
 * checked, co-signed and sent exactly once (settle.ts), and the ingester and engine then attribute
 * the transfer by the claim written before it was sent, as on EVM.
 */
export interface SvmX402 {
  /** The fee payer, when `SVC_SOLANA_RELAYER_KEY` and an RPC URL are configured. */
  readonly feePayer: SvmFeePayer | undefined;
  /** Why a solana session cannot be paid with x402 here, or undefined when it can. */
  unavailable(session: Pick<CheckoutSession, 'livemode' | 'chain' | 'tokenAddresses'>): string | undefined;
  /** A solana session's x402 answer (the route's `session` for chain solana). */
  session(
    session: CheckoutSession,
    payment: { header: string; version: 1 | 2 } | undefined,
    views: { stateOf(session: CheckoutSession): Extract<SessionAnswer, { kind: 'state' }>['session']; resourceUrl: string },
  ): Promise<SessionAnswer>;
  /**
   * A waiting session's Solana option (src/x402/choiceSolana.ts): the requirements of paying `amount`
   * of the pair's mint to `payTo`, or why x402 cannot take it here.
   */
  choiceRequirements(
    option: Pick<CheckoutSession, 'livemode' | 'chain' | 'tokenAddresses'>,
    params: { payTo: string; amount: bigint; secondsLeft: number },
  ): { offer: SvmOffer; requirements: SvmRequirements } | { reason: string };
  /**
   * Settles a payment of a waiting session's Solana option exactly once; `prepare` fixes the
   * choice in the settlement row's transaction and returns the chosen session's id.
   */
  settleChoice(params: {
    offer: SvmOffer;
    requirements: SvmRequirements;
    header: string;
    target: { sessionId: string; merchantId: string; livemode: boolean };
    prepare: (sql: Sql) => Promise<string>;
  }): Promise<SettleOutcome>;
  /** The facilitator's `/x402/verify` for a Solana payment (svm/facilitator.ts). */
  verify(
    merchant: { merchantId: string; livemode: boolean },
    body: FacilitatorRequest,
  ): Promise<{ isValid: boolean; invalidReason?: string; invalidMessage?: string; payer?: string }>;
  /** The facilitator's `/x402/settle` for a Solana payment: `createSession` records it as a session of the merchant. */
  settle(
    merchant: { merchantId: string; livemode: boolean },
    body: FacilitatorRequest,
    createSession: (sql: Sql, terms: FacilitatorSessionTerms) => Promise<string>,
  ): Promise<SettleResponse & { errorMessage?: string; sessionId?: string }>;
  /** `/x402/supported`'s Solana kind (with `extra.feePayer`), when a live key can settle on solana here. */
  supportedKind(livemode: boolean): ReturnType<typeof svmSupportedKind>;
  /** Resolves a solana row a crashed process left in flight (the caller took it over). */
  resolveStale(row: Settlement): Promise<unknown>;
  /** Reads the fee payer's SOL into the relayer gauge. */
  recordBalance(): Promise<void>;
}

export function createSvmX402(params: {
  store: Store;
  logger: Logger;
  metrics: X402Metrics;
  registry: Registry;
  config: Pick<Config, 'rpc'> & Partial<Pick<Config, 'solanaFeePayerKey'>>;
  chain: ChainConfig;
  pollMs: number;
  /** Tests may pass their own fee payer. */
  feePayer?: SvmFeePayer | undefined;
}): SvmX402 {
  const urls = params.config.rpc.solana?.http ?? [];
  const key = params.config.solanaFeePayerKey;
  const feePayer =
    params.feePayer ??
    (key && urls.length > 0
      ? createSvmFeePayer({ key, rpc: createSolanaRpcPool({ urls, logger: params.logger, metrics: createIngestMetrics(params.registry) }) })
      : undefined);
  const ctx: SvmSettleContext | undefined = feePayer && {
    store: params.store,
    logger: params.logger,
    metrics: params.metrics,
    feePayer,
    pollMs: params.pollMs,
  };

  function unavailable(session: Pick<CheckoutSession, 'livemode' | 'chain' | 'tokenAddresses'>): string | undefined {
    if (!svmOffer(session, params.chain)) return 'x402 on solana is for live sessions (the sandbox has no Solana mint a standard client can read)';
    if (!feePayer) return 'x402 is not enabled on solana: the operator has not set SVC_SOLANA_RELAYER_KEY with SVC_SOLANA_RPC_URL';
    return undefined;
  }

  function requirementsOf(session: CheckoutSession): SvmRequirements {
    const secondsLeft = (session.expiresAt.getTime() - session.now.getTime()) / 1000;
    return svmRequirements(svmOffer(session, params.chain)!, {
      payTo: session.payTo,
      amount: amountRemaining(session),
      secondsLeft,
      feePayer: feePayer!.address,
    });
  }

  function challenge(session: CheckoutSession, resourceUrl: string, refusal?: Refusal): SessionAnswer {
    const secondsLeft = (session.expiresAt.getTime() - session.now.getTime()) / 1000;
    const accepts = amountRemaining(session) > 0n && secondsLeft > 0 ? [requirementsOf(session)] : [];
    const error = refusal
      ? `${refusal.reason}: ${refusal.message}`
      : 'payment required: sign a TransferChecked of exactly the amount in accepts, with extra.feePayer as fee payer, and send it in PAYMENT-SIGNATURE';
    const resource = { url: resourceUrl, description: `Payment ${session.id} to ${session.merchantName}`, mimeType: 'application/json' };
    return {
      kind: 'required',
      // The SVM requirements' `extra` is { feePayer }: the wire type names the EVM one.
      required: { x402Version: 2, error, resource, accepts: accepts as never, extensions: paymentIdentifierDeclaration() },
      // x402 v1 names no Solana network this gateway offers: v1 clients see no requirements.
      v1: { x402Version: 1, error, accepts: [] },
      ...(refusal ? { reason: refusal.reason } : {}),
    };
  }

  return {
    feePayer,
    unavailable,
    async session(session, payment, views) {
      const view = checkoutViewOf(session);
      const payable = (view === 'awaiting' || view === 'underpaid' || view === 'detected') && amountRemaining(session) > 0n;
      const reason = unavailable(session);
      if (!payment) {
        if (payable) {
          if (reason) throw new UnavailableError(reason);
          return challenge(session, views.resourceUrl);
        }
        if (view === 'expired' || view === 'failed') throw new GoneError(`session ${session.id} is ${view}; it cannot be paid any more`);
        return { kind: 'state', session: views.stateOf(session) };
      }
      const payload = readSvmPaymentHeader(payment.header);
      if (reason || !ctx) throw new UnavailableError(reason ?? 'x402 is not enabled on solana');
      if (payload.paymentId)
        await holdPaymentId(params.store, { merchantId: session.merchantId, paymentId: payload.paymentId, payloadHash: svmPayloadHash(payload) });
      const offer = svmOffer(session, params.chain)!;
      const outcome = await settleSvmOnce(ctx, {
        offer,
        requirements: requirementsOf(session),
        payload,
        target: { sessionId: session.id, merchantId: session.merchantId, livemode: session.livemode, source: 'resource' },
        ...(payable ? {} : { refusal: { reason: REASONS.notPayable, message: `session ${session.id} is ${view} and asks for nothing more` } }),
      });
      if (!outcome.ok) return challenge(session, views.resourceUrl, outcome.refusal);
      const after = (await loadCheckoutSession(params.store, session.id))!;
      return {
        kind: 'paid',
        response: { success: true, transaction: outcome.settlement.txHash!, network: offer.network, payer: outcome.settlement.payer },
        version: payment.version,
        session: views.stateOf(after),
      };
    },
    choiceRequirements(option, { payTo, amount, secondsLeft }) {
      const reason = unavailable(option);
      const offer = svmOffer(option, params.chain);
      if (reason || !offer) return { reason: reason ?? 'no x402 offer for this token' };
      return { offer, requirements: svmRequirements(offer, { payTo, amount, secondsLeft, feePayer: feePayer!.address }) };
    },
    async settleChoice({ offer, requirements, header, target, prepare }) {
      if (!ctx) throw new UnavailableError('x402 is not enabled on solana');
      const payload = readSvmPaymentHeader(header);
      if (payload.paymentId)
        await holdPaymentId(params.store, { merchantId: target.merchantId, paymentId: payload.paymentId, payloadHash: svmPayloadHash(payload) });
      return settleSvmOnce(ctx, { offer, requirements, payload, target: { ...target, source: 'resource' }, prepare: (sql) => prepare(sql) });
    },
    verify: (merchant, body) => verifySvmFacilitator(ctx, params.store, { merchant, body, chain: params.chain }),
    settle: (merchant, body, createSession) => settleSvmFacilitator(ctx, { merchant, body, chain: params.chain, createSession }),
    supportedKind: (livemode) => svmSupportedKind({ livemode, feePayer: feePayer?.address }),
    async resolveStale(row) {
      if (!ctx) return undefined;
      return resolveSvmStale(ctx, row, undefined);
    },
    async recordBalance() {
      if (feePayer) await recordSvmBalance({ metrics: params.metrics, logger: params.logger }, feePayer);
    },
  };
}
