import type { Registry } from 'prom-client';
import type { Hex } from 'viem';
import type { Store } from '../store/index.ts';
import type { Logger } from '../internal/logger.ts';
import { liveChains, type ChainName, type Config } from '../internal/config.ts';
import { loadChains, type ChainConfig } from '../internal/chains.ts';
import { sleep } from '../internal/shutdown.ts';
import type { Sandbox } from '../sandbox/index.ts';
import { createRpc } from '../ingest/evm/rpc.ts';
import { createIngestMetrics } from '../ingest/metrics.ts';
import { loadCheckoutSession, type CheckoutSession } from '../checkout/view.ts';
import { buildInstructions, statusOf } from '../checkout/instructions.ts';
import { createX402Metrics, recordGasThresholds, type X402Metrics } from './metrics.ts';
import { DEFAULT_GAS_ALERT_BELOW } from '../internal/gasAlert.ts';
import { createRelayer, type Relayer } from './relayer.ts';
import { sessionX402Url, x402Offer, type X402Offer } from './requirements.ts';
import { x402Unavailable } from './availability.ts';
import type { Session } from '../payments/session.ts';
import { permit2Unavailable, probePermit2 } from './permit2/availability.ts';
import { LEASE_SECONDS, recordGas, resolveStale, type SettleContext } from './settle.ts';
import { staleSettlements, takeOver } from './settlements.ts';
import { supportedKinds, type FacilitatorRequest } from './facilitator.ts';
import { settleFacilitator, verifyFacilitator, type FacilitatorDeps } from './facilitatorAnswers.ts';
import { answerSession, loadX402Session, sessionChallenge, settleResponse, type SessionAnswerDeps } from './sessionAnswer.ts';
import { createSvmX402, type SvmX402 } from './svm/index.ts';
import type { SvmFeePayer } from './svm/feePayer.ts';
import { answerWaiting, type ChoiceX402Deps } from './choice.ts';
import type { QuoteForPair } from './choiceOffers.ts';
import { getPendingChoiceWithMerchant, type PendingChoice } from '../payments/choices.ts';
import type { PaymentOption } from '../payments/options.ts';
import { waitingX402Pairs, waitingX402Url } from './waitingUrl.ts';
import type { PaymentRequired, PaymentRequirementsV1, SettleResponse } from './wire.ts';

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
  /**
   * A session's x402 URL: without a payment header the 402 challenge, with one the settlement.
   * `quote` converts a fiat price for a waiting session's options (the API's feed reader): choice.ts.
   */
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

/** Builds the x402 stage: its relayers and Solana fee payer, and the answers of session, waiting-session and facilitator requests. */
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

  const unavailable = (session: Pick<CheckoutSession, 'livemode' | 'chain' | 'tokenAddresses'>) =>
    x402Unavailable({ relayers, sandbox: params.sandbox }, session) ?? permit2Unavailable(permit2Ready, session, chains[session.chain]);

  /** The session's x402Url where this process can take its payment (its offer, and x402 enabled on its chain); else null. */
  function urlOf(session: X402UrlFields): string | null {
    if (session.chain === 'solana') return svm.unavailable(session) ? null : `${params.config.publicUrl}/checkout/${encodeURIComponent(session.id)}/x402`;
    if (unavailable(session)) return null;
    return sessionX402Url(params.config.publicUrl, session, chains[session.chain]);
  }

  const stateOf = (session: CheckoutSession) => statusOf(buildInstructions(session, { publicUrl: params.config.publicUrl, x402Url: urlOf(session), chains }));

  const single: SessionAnswerDeps = { store: params.store, ctx, chains, config: params.config, svm, unavailable, stateOf };

  const facilitator: FacilitatorDeps = {
    store: params.store,
    ctx,
    chains,
    relayers,
    sandbox: params.sandbox,
    config: params.config,
    liveChains: chainsLive,
    svm,
  };

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
      const session = await loadX402Session(single, sessionId);
      return session.chain === 'solana' ? { kind: 'state', session: stateOf(session) } : sessionChallenge(single, session, refusal);
    },
    answerPaid: async (sessionId, settlement, network, version) => ({
      kind: 'paid',
      response: settleResponse(settlement, network, version),
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
      return answerSession(single, await loadX402Session(single, sessionId, found), payment);
    },
    verify: (merchant, body) => verifyFacilitator(facilitator, merchant, body),
    settle: (merchant, body) => settleFacilitator(facilitator, merchant, body),
    supported: (livemode) => supportedKinds({ livemode, chains, relayers, svm: svm.supportedKind(livemode) }),
    offerOf: (session) => (unavailable(session) ? undefined : x402Offer(session, chains[session.chain])),
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
