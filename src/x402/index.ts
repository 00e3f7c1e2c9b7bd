import type { Registry } from 'prom-client';
import { getAddress, type Hex } from 'viem';
import type { Sql, Store } from '../store/index.ts';
import type { Logger } from '../internal/logger.ts';
import { liveChains, type ChainName, type Config } from '../internal/config.ts';
import { loadChains, type ChainConfig } from '../internal/chains.ts';
import { GoneError, notFound, UnavailableError } from '../internal/errors.ts';
import { sleep } from '../internal/shutdown.ts';
import type { Sandbox } from '../sandbox/index.ts';
import { createRpc } from '../ingest/evm/rpc.ts';
import { createIngestMetrics } from '../ingest/metrics.ts';
import { loadCheckoutSession, type CheckoutSession } from '../checkout/view.ts';
import { buildInstructions, statusOf } from '../checkout/instructions.ts';
import { amountRemaining, checkoutViewOf } from '../checkout/view.ts';
import { REASONS, type Refusal } from './authorization.ts';
import { createX402Metrics, recordGasThresholds, type X402Metrics } from './metrics.ts';
import { DEFAULT_GAS_ALERT_BELOW } from '../internal/gasAlert.ts';
import { createRelayer, type Relayer } from './relayer.ts';
import { paymentRequired, requirementsFor, requirementsV1, sessionX402Url, x402Offer, type X402Offer } from './requirements.ts';
import { x402Unavailable } from './availability.ts';
import { payerAddress, type Session } from '../payments/session.ts';
import { permit2Unavailable, probePermit2 } from './permit2/availability.ts';
import { holdPaymentId } from './paymentId.ts';
import { signatureHash } from './settlements.ts';
import { LEASE_SECONDS, recordGas, resolveStale, settleOnce, verifyPayment, type SettleContext, type SettleOutcome } from './settle.ts';
import { staleSettlements, takeOver, type Settlement } from './settlements.ts';
import {
  checkPayTo,
  createFacilitatorSession,
  readFacilitatorRequest,
  supportedKinds,
  type FacilitatorRequest,
  type FacilitatorSessionTerms,
} from './facilitator.ts';
import { isSvmFacilitatorRequest } from './svm/facilitator.ts';
import { createSvmX402, svmOffer, type SvmX402 } from './svm/index.ts';
import type { SvmFeePayer } from './svm/feePayer.ts';
import { answerWaiting, type ChoiceX402Deps, type QuoteForPair } from './choice.ts';
import { getPendingChoiceWithMerchant, type PendingChoice } from '../payments/choices.ts';
import type { PaymentOption } from '../payments/options.ts';
import { waitingX402Pairs, waitingX402Url } from './waitingUrl.ts';
import { readPaymentHeader, v1NetworkName, type PaymentRequired, type PaymentRequirementsV1, type SettleResponse } from './wire.ts';

export { sessionX402Url, x402Offer, requirementsFor, type X402Offer } from './requirements.ts';
export { HEADERS, encodeHeader } from './wire.ts';
export type { SettleResponse, PaymentRequired } from './wire.ts';

/** What deciding a session's `x402Url` reads of it. */
export type X402UrlFields = Pick<Session, 'id' | 'chain' | 'livemode' | 'tokenAddresses'>;

/** What a session's x402 URL answers; the route turns it into headers and a status. */
export type SessionAnswer =
  | { kind: 'required'; required: PaymentRequired; v1: { x402Version: 1; error: string; accepts: PaymentRequirementsV1[] }; reason?: string }
  | { kind: 'paid'; response: SettleResponse; version: 1 | 2; session: ReturnType<typeof statusOf> }
  | { kind: 'state'; session: ReturnType<typeof statusOf> };

/** The x402 stage: session resources, the facilitator, the relayers. */
export interface X402 {
  readonly relayers: Partial<Record<ChainName, Relayer>>;
  /** Solana's `exact` scheme (svm/): its fee payer and session answers. */
  readonly svm: SvmX402;
  /** The `x402Url` a session advertises: null where it has no x402 offer or x402 is not enabled on its chain here. */
  urlOf(session: X402UrlFields): string | null;
  /** A waiting session's `x402Url` (src/api/choiceViews.ts): where x402 can pay at least one of its options here; else null. */
  pendingUrlOf(choice: Pick<PendingChoice, 'id' | 'livemode' | 'paymentOptions' | 'terms'>): string | null;
  /** The options of a waiting session its 402 can list here (waitingUrl.ts). */
  pendingPairsOf(choice: Pick<PendingChoice, 'livemode' | 'paymentOptions' | 'terms'>): PaymentOption[];
  /** The x402 offer a session with these terms would make, where this process can take it (as {@link X402.urlOf}); else undefined. */
  offerOf(session: Pick<Session, 'chain' | 'livemode' | 'tokenAddresses'>): X402Offer | undefined;
  /** A session's x402 URL: without a payment header the 402 challenge, with one the settlement. */
  /** `quote` converts a fiat price for a waiting session's options (the API's feed reader): choice.ts. */
  session(params: { sessionId: string; payment?: { header: string; version: 1 | 2 } | undefined; quote?: QuoteForPair | undefined }): Promise<SessionAnswer>;
  /** `POST /x402/verify`. */
  verify(
    merchant: { merchantId: string; livemode: boolean },
    body: FacilitatorRequest,
  ): Promise<{ isValid: boolean; invalidReason?: string; invalidMessage?: string; payer?: string }>;
  /** `POST /x402/settle`: settles into a new session of the merchant. */
  settle(
    merchant: { merchantId: string; livemode: boolean },
    body: FacilitatorRequest,
  ): Promise<SettleResponse & { errorMessage?: string; sessionId?: string }>;
  /** `GET /x402/supported`. */
  supported(livemode: boolean): ReturnType<typeof supportedKinds>;
  /** Resolves settlements a crashed process left in flight (daemon start and the gas watch's ticks). */
  recover(): Promise<number>;
  /** Looks up once per chain whether Permit2 and x402's proxy are deployed (USDT and other non-EIP-3009 sessions are offered only there). */
  probe(): Promise<void>;
  /** Reads each relayer's gas balance into the metric every `everyMs` until `signal` aborts; also runs {@link recover}. */
  watch(signal: AbortSignal, everyMs?: number): Promise<void>;
}

export interface X402Params {
  store: Store;
  logger: Logger;
  metrics: Registry;
  config: Pick<Config, 'publicUrl' | 'rpc' | 'relayerKeys' | 'monitorWindowSeconds' | 'feeBps'> & Partial<Config>;
  /** Tests pass a Solana fee payer on their own RPC; by default one from SVC_SOLANA_RELAYER_KEY and SVC_SOLANA_RPC_URL. */
  svmFeePayer?: SvmFeePayer;
  sandbox?: Sandbox | undefined;
  chains?: Record<ChainName, ChainConfig>;
  /** Tests pass relayers on their own chains; by default one per chain with a relayer key and an RPC URL. */
  relayers?: Partial<Record<ChainName, Relayer>>;
  /** How often a waiting request polls (receipt, row). */
  pollMs?: number;
}

/** Builds the relayers of the chains that have `SVC_<CHAIN>_RELAYER_KEY` and an RPC URL, on the ingester's RPC pool. */
export function createRelayers(params: Pick<X402Params, 'config' | 'logger' | 'metrics' | 'chains'>): Partial<Record<ChainName, Relayer>> {
  const chains = params.chains ?? loadChains();
  const relayers: Partial<Record<ChainName, Relayer>> = {};
  for (const [name, key] of Object.entries(params.config.relayerKeys) as [ChainName, Hex][]) {
    const urls = params.config.rpc[name].http.length > 0 ? params.config.rpc[name].http : params.config.rpc[name].ws;
    if (!key || urls.length === 0) continue;
    const rpc = createRpc({ chain: name, urls, logger: params.logger, metrics: createIngestMetrics(params.metrics) });
    relayers[name] = createRelayer({ chain: name, chainId: chains[name].chainId as number, key, rpc });
  }
  return relayers;
}

export function createX402(params: X402Params): X402 {
  const chains = params.chains ?? loadChains();
  const logger = params.logger.child({ stage: 'x402' });
  const metrics: X402Metrics = createX402Metrics(params.metrics);
  const relayers = params.relayers ?? createRelayers(params);
  const ctx: SettleContext = { store: params.store, logger, metrics, relayers, sandbox: params.sandbox, pollMs: params.pollMs ?? 500 };
  const chainsLive = params.config.rpc ? liveChains(params.config as Config) : [];
  const permit2Ready = new Set<ChainName>();
  const probe = () => probePermit2(relayers, permit2Ready, logger);
  const svm = createSvmX402({
    store: params.store,
    logger,
    metrics,
    registry: params.metrics,
    config: params.config,
    chain: chains.solana,
    pollMs: ctx.pollMs,
    feePayer: params.svmFeePayer,
  });
  const gasChains = [...(Object.keys(relayers) as ChainName[]), ...(svm.feePayer ? (['solana'] as const) : [])];
  recordGasThresholds(metrics, params.config.relayerGasAlertBelow ?? DEFAULT_GAS_ALERT_BELOW, gasChains);

  function available(session: Pick<CheckoutSession, 'livemode' | 'chain' | 'tokenAddresses'>): void {
    const reason = x402Unavailable({ relayers, sandbox: params.sandbox }, session) ?? permit2Unavailable(permit2Ready, session, chains[session.chain]);
    if (reason) throw new UnavailableError(reason);
  }

  /** The session's x402Url where this process can take its payment (its offer, and x402 enabled on its chain); else null. */
  function urlOf(session: X402UrlFields): string | null {
    if (session.chain === 'solana') return svm.unavailable(session) ? null : `${params.config.publicUrl}/checkout/${encodeURIComponent(session.id)}/x402`;
    if (x402Unavailable({ relayers, sandbox: params.sandbox }, session) ?? permit2Unavailable(permit2Ready, session, chains[session.chain])) return null;
    return sessionX402Url(params.config.publicUrl, session, chains[session.chain]);
  }

  function challenge(session: CheckoutSession, refusal?: Refusal): SessionAnswer {
    const offer = x402Offer(session, chains[session.chain])!;
    const secondsLeft = (session.expiresAt.getTime() - session.now.getTime()) / 1000;
    const remaining = amountRemaining(session);
    // Nothing left to pay (a refused retry on a paid or expired session): no requirements to sign.
    const accepts = remaining > 0n && secondsLeft > 0 ? [requirementsFor(offer, { payTo: payerAddress(session), amount: remaining, secondsLeft })] : [];
    const resource = {
      url: `${params.config.publicUrl}/checkout/${session.id}/x402`,
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

  const unavailable = (session: Pick<CheckoutSession, 'livemode' | 'chain' | 'tokenAddresses'>) =>
    x402Unavailable({ relayers, sandbox: params.sandbox }, session) ?? permit2Unavailable(permit2Ready, session, chains[session.chain]);

  const stateOf = (session: CheckoutSession) => statusOf(buildInstructions(session, { publicUrl: params.config.publicUrl, x402Url: urlOf(session), chains }));

  async function load(sessionId: string, loaded?: CheckoutSession): Promise<CheckoutSession> {
    const session = loaded ?? (await loadCheckoutSession(params.store, sessionId));
    if (!session) throw notFound(`no checkout session ${sessionId}`);
    if (!x402Offer(session, chains[session.chain]) && !svmOffer(session, chains[session.chain]))
      throw notFound(`session ${sessionId} has no x402 offer on its chain and token (docs/agents.md)`);
    return session;
  }

  /** Records a facilitator settlement as a new session of the merchant (any chain), in the row's transaction. */
  const facilitatorSession =
    (merchant: { merchantId: string; livemode: boolean }) =>
    (sql: Sql, payment: FacilitatorSessionTerms): Promise<string> =>
      createFacilitatorSession(sql, {
        merchantId: merchant.merchantId,
        livemode: merchant.livemode,
        payment,
        chains,
        monitorWindowSeconds: params.config.monitorWindowSeconds,
        feeBps: params.config.feeBps,
        liveChains: chainsLive,
      });

  function response(settlement: Settlement, network: string, version: 1 | 2): SettleResponse {
    return {
      success: true,
      transaction: settlement.txHash!,
      network: version === 1 ? (v1NetworkName(network) ?? network) : network,
      // A Solana payer is a base58 address, an EVM one is checksummed.
      payer: network.startsWith('solana:') ? settlement.payer : getAddress(settlement.payer),
    };
  }

  /** What a waiting session's view needs to tell which options x402 takes here (waitingUrl.ts). */
  const waitingCtx = () => ({ publicUrl: params.config.publicUrl, chains, unavailable, svmUnavailable: svm.unavailable });

  const waiting: ChoiceX402Deps = {
    store: params.store,
    ctx,
    svm,
    chains,
    publicUrl: () => params.config.publicUrl,
    choiceConfig: { monitorWindowSeconds: params.config.monitorWindowSeconds, feeBps: params.config.feeBps, liveChains: chainsLive },
    unavailable,
    answerChosen: async (sessionId, refusal) => {
      const session = await load(sessionId);
      return session.chain === 'solana' ? { kind: 'state', session: stateOf(session) } : challenge(session, refusal);
    },
    answerPaid: async (sessionId, settlement, network, version) => ({
      kind: 'paid',
      response: response(settlement, network, version),
      version,
      session: stateOf((await loadCheckoutSession(params.store, sessionId))!),
    }),
  };

  return {
    relayers,
    svm,
    urlOf,
    pendingUrlOf: (choice) => waitingX402Url(waitingCtx(), choice),
    pendingPairsOf: (choice) => waitingX402Pairs(waitingCtx(), choice),
    async session({ sessionId, payment, quote }) {
      // A session waiting for its customer's choice has no payment_sessions row yet (choice.ts).
      const found = await loadCheckoutSession(params.store, sessionId);
      if (!found) {
        const choice = await getPendingChoiceWithMerchant(params.store, sessionId);
        if (choice) return answerWaiting(waiting, choice, payment, quote);
      }
      const session = await load(sessionId, found);
      if (session.chain === 'solana') return svm.session(session, payment, { stateOf, resourceUrl: `${params.config.publicUrl}/checkout/${session.id}/x402` });
      const view = checkoutViewOf(session);
      const payable = (view === 'awaiting' || view === 'underpaid' || view === 'detected') && amountRemaining(session) > 0n;
      if (!payment) {
        if (payable) {
          available(session);
          return challenge(session);
        }
        if (view === 'expired' || view === 'failed') throw new GoneError(`session ${sessionId} is ${view}; it cannot be paid any more`);
        return { kind: 'state', session: stateOf(session) };
      }
      const payload = readPaymentHeader(payment.header);
      available(session);
      if (payload.paymentId)
        await holdPaymentId(params.store, { merchantId: session.merchantId, paymentId: payload.paymentId, payloadHash: signatureHash(payload) });
      const offer = x402Offer(session, chains[session.chain])!;
      const secondsLeft = (session.expiresAt.getTime() - session.now.getTime()) / 1000;
      const requirements = requirementsFor(offer, { payTo: payerAddress(session), amount: amountRemaining(session), secondsLeft });
      const outcome: SettleOutcome = await settleOnce(ctx, {
        offer,
        requirements,
        payload,
        target: { sessionId: session.id, merchantId: session.merchantId, livemode: session.livemode, source: 'resource' },
        ...(payable ? {} : { refusal: { reason: REASONS.notPayable, message: `session ${session.id} is ${view} and asks for nothing more` } }),
      });
      if (!outcome.ok) return challenge(session, outcome.refusal);
      const after = (await loadCheckoutSession(params.store, session.id))!;
      return { kind: 'paid', response: response(outcome.settlement, offer.network, payment.version), version: payment.version, session: stateOf(after) };
    },

    async verify(merchant, body) {
      if (isSvmFacilitatorRequest(body)) return svm.verify(merchant, body);
      const read = readFacilitatorRequest(body, { livemode: merchant.livemode, chains });
      const payer = read.payload.authorization.from;
      if ('refusal' in read) return { isValid: false, invalidReason: read.refusal.reason, invalidMessage: read.refusal.message, payer };
      const refusal =
        (await checkPayTo(params.store, { merchantId: merchant.merchantId, offer: read.offer, payTo: read.requirements.payTo })) ??
        (await verifyPayment(ctx, { ...read, livemode: merchant.livemode }));
      return refusal ? { isValid: false, invalidReason: refusal.reason, invalidMessage: refusal.message, payer } : { isValid: true, payer };
    },

    async settle(merchant, body) {
      if (isSvmFacilitatorRequest(body)) return svm.settle(merchant, body, facilitatorSession(merchant));
      const read = readFacilitatorRequest(body, { livemode: merchant.livemode, chains });
      const payer = read.payload.authorization.from;
      const network = 'requirements' in read ? read.requirements.network : String((body.paymentRequirements as { network?: unknown })?.network ?? '');
      const failed = (refusal: Refusal) => ({ success: false, errorReason: refusal.reason, errorMessage: refusal.message, transaction: '', network, payer });
      if ('refusal' in read) return failed(read.refusal);
      if (merchant.livemode && !relayers[read.offer.chain])
        return failed({ reason: REASONS.network, message: `this gateway has no relayer on ${read.offer.chain}` });
      if (!merchant.livemode && !params.sandbox) return failed({ reason: REASONS.network, message: 'the sandbox does not run in this process' });
      const payTo = await checkPayTo(params.store, { merchantId: merchant.merchantId, offer: read.offer, payTo: read.requirements.payTo });
      if (payTo) return failed(payTo);
      if (read.payload.paymentId)
        await holdPaymentId(params.store, { merchantId: merchant.merchantId, paymentId: read.payload.paymentId, payloadHash: signatureHash(read.payload) });
      const outcome = await settleOnce(ctx, {
        ...read,
        target: { merchantId: merchant.merchantId, livemode: merchant.livemode, source: 'facilitator' },
        prepare: (sql) => facilitatorSession(merchant)(sql, { ...read, payer }),
      });
      if (!outcome.ok) return failed(outcome.refusal);
      return { ...response(outcome.settlement, read.offer.network, 2), sessionId: outcome.settlement.sessionId };
    },

    supported: (livemode) => supportedKinds({ livemode, chains, relayers, svm: svm.supportedKind(livemode) }),
    offerOf: (session) =>
      (x402Unavailable({ relayers, sandbox: params.sandbox }, session) ?? permit2Unavailable(permit2Ready, session, chains[session.chain]))
        ? undefined
        : x402Offer(session, chains[session.chain]),
    probe,

    async recover() {
      let resolved = 0;
      for (const row of await staleSettlements(params.store, LEASE_SECONDS)) {
        if (!(await takeOver(params.store, row.id, LEASE_SECONDS))) continue;
        await (row.chain === 'solana' ? svm.resolveStale(row) : resolveStale(ctx, row, undefined)).catch((error) =>
          logger.error({ msg: 'x402 recovery failed', settlement: row.id, err: error }),
        );
        resolved++;
      }
      return resolved;
    },

    async watch(signal, everyMs = 60_000) {
      await probe();
      while (!signal.aborted) {
        for (const relayer of Object.values(relayers)) if (relayer) await recordGas(ctx, relayer);
        await svm.recordBalance();
        await this.recover().catch((error) => logger.warn({ msg: 'x402 recovery pass failed', err: error }));
        await sleep(everyMs, signal).catch(() => {});
      }
    },
  };
}
