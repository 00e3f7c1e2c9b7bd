import type { Store, Sql } from '../store/index.ts';
import type { ChainConfig } from '../internal/chains.ts';
import type { ChainName } from '../internal/config.ts';
import { ConflictError, GoneError, InvalidRequestError, NotFoundError, UnavailableError, UnprocessableError } from '../internal/errors.ts';
import { choiceExpired, chooseOption, type ChoiceConfig, type PendingChoice } from '../payments/choices.ts';
import { pairName, type PaymentOption } from '../payments/options.ts';
import type { Priced } from '../payments/choicePrices.ts';
import type { FiatPrice } from '../pricing/index.ts';
import { checkSessionTerms } from '../payments/terms.ts';
import { depositAddressFor } from '../payments/attribution.ts';
import { previewDueAmount } from '../payments/duePreview.ts';
import { payerAddress, type Session } from '../payments/session.ts';
import { REASONS, type Refusal } from './authorization.ts';
import { holdPaymentId } from './paymentId.ts';
import { paymentRequired, requirementsFor, requirementsV1, x402Offer, type X402Offer } from './requirements.ts';
import { settleOnce, type SettleContext } from './settle.ts';
import { signatureHash, type Settlement } from './settlements.ts';
import { readPaymentHeader, type PaymentPayload, type PaymentRequirements } from './wire.ts';
import type { SessionAnswer } from './index.ts';
import type { SvmX402 } from './svm/index.ts';
import type { SvmOffer, SvmRequirements } from './svm/offer.ts';

/**
 * x402 for a session waiting for its customer's choice of (chain, currency) (docs/agents.md,
 * "Waiting sessions"). The 402 lists one `accepts` entry per option x402 can pay here, each as
 * the session for that pair would ask: the option's token, the wallet (or, in address mode, the
 * deposit address, which depends only on the wallet and the session id, both known before the
 * choice), and the amount in that token's base units (in amount mode the due amount the choice
 * would pick now: duePreview.ts). Settling a payload fixes the choice of its option in the
 * transaction that inserts the settlement row, before anything is sent; the settlement then goes
 * on exactly as a single-pair session's (settle.ts). A payload for another option than the one
 * chosen meanwhile, or whose amount or recipient the choice no longer gives, rolls that
 * transaction back and is refused with nothing sent.
 */

/** One option x402 can pay, with the requirements a payer signs for it. */
export interface ChoiceOffer {
  pair: PaymentOption;
  /** An EVM option's offer (EIP-3009 or Permit2); undefined for a Solana option ({@link svm}). */
  offer: X402Offer | undefined;
  requirements: PaymentRequirements;
  /** A fiat-priced session's conversion for this pair, quoted with this 402 and passed to the choice. */
  priced?: Priced | undefined;
  /** A Solana option: the SVM offer and requirements (`requirements` then holds the same, for the 402). */
  svm?: { offer: SvmOffer; requirements: SvmRequirements } | undefined;
}

/**
 * Converts a fiat price for a pair (the API's `amountOf` over its feed reader: Chainlink live,
 * fixed rates in the sandbox). Given by the HTTP route with each request; without it a
 * fiat-priced waiting session lists no option.
 */
export type QuoteForPair = (price: FiatPrice, pair: PaymentOption, livemode: boolean) => Promise<Priced>;

/** What the waiting sessions' x402 needs from the stage. */
export interface ChoiceX402Deps {
  store: Store;
  ctx: SettleContext;
  chains: Record<ChainName, ChainConfig>;
  publicUrl: () => string;
  choiceConfig: ChoiceConfig;
  /** Solana's `exact` scheme for Solana options (svm/index.ts). */
  svm: Pick<SvmX402, 'choiceRequirements' | 'settleChoice'>;
  /** Why x402 cannot take a session with these terms here (relayer, sandbox, Permit2), or undefined. */
  unavailable(session: { livemode: boolean; chain: ChainName; tokenAddresses: readonly string[] }): string | undefined;
  /** The answer for a session that is chosen by now: its single-pair x402 answer, with `refusal` when one was sent and refused. */
  answerChosen(sessionId: string, refusal: Refusal): Promise<SessionAnswer>;
  /** The 200 of a settled payment: `PAYMENT-RESPONSE` and the (now chosen) session's state. */
  answerPaid(sessionId: string, settlement: Settlement, network: string, version: 1 | 2): Promise<SessionAnswer>;
}

/**
 * A waiting session priced in a fiat currency converts at the choice (src/pricing). Its 402 quotes
 * each option when it is fetched, and settlement quotes again: a payload is settled only when its
 * signed amount is what the feeds give at that moment (they move on a deviation threshold or a
 * heartbeat of hours, so the minute between the two rarely changes it; when it does, the payer
 * gets a fresh 402). The chosen session records that quote, as a choice on the page does.
 */
export function fiatPriced(choice: Pick<PendingChoice, 'price'>): boolean {
  return choice.price !== null && choice.price !== undefined;
}

/** Refuses a payload inside the settlement's transaction: thrown there so the choice and the row roll back. */
class ChoiceRefused extends Error {
  constructor(readonly refusal: Refusal) {
    super(refusal.message);
  }
}

/**
 * The options of `choice` x402 can pay in this process, with their requirements now; `skipped`
 * says why each other option is not listed (for the 503 when none is).
 */
export async function choiceOffers(deps: ChoiceX402Deps, choice: PendingChoice, quote?: QuoteForPair): Promise<{ offers: ChoiceOffer[]; skipped: string[] }> {
  const offers: ChoiceOffer[] = [];
  const skipped: string[] = [];
  const secondsLeft = (choice.expiresAt.getTime() - choice.now.getTime()) / 1000;
  // A fiat price: every option's conversion at once (each bounded by the route's timeout), not one after another.
  const quotes = choice.price && quote ? await Promise.allSettled(choice.paymentOptions.map((pair) => quote(choice.price!, pair, choice.livemode))) : undefined;
  for (const [index, pair] of choice.paymentOptions.entries()) {
    const chain = deps.chains[pair.chain];
    if (!chain) continue;
    let priced: Priced | undefined;
    let terms: Awaited<ReturnType<typeof checkSessionTerms>>;
    try {
      const quoted = quotes?.[index];
      if (choice.price && !quoted) throw new InvalidRequestError('no price feed reader in this process to convert the price');
      if (quoted?.status === 'rejected') throw quoted.reason;
      priced = quoted?.value;
      terms = await checkSessionTerms(deps.store, {
        merchantId: choice.merchantId,
        livemode: choice.livemode,
        chain: pair.chain,
        currency: pair.currency,
        amount: priced?.amount ?? choice.terms.amount!,
        attribution: choice.terms.attribution,
        liveChains: deps.choiceConfig.liveChains,
      });
    } catch (error) {
      if (!(error instanceof InvalidRequestError || error instanceof ConflictError || error instanceof UnprocessableError || error instanceof UnavailableError))
        throw error;
      skipped.push(`${pairName(pair)}: ${error.shortMessage}`);
      continue;
    }
    const session = { chain: pair.chain, livemode: choice.livemode, tokenAddresses: terms.tokens };
    if (chain.kind === 'solana') {
      const offered = await solanaOffer(deps, { pair, terms, session, secondsLeft, priced });
      if ('reason' in offered) skipped.push(`${pairName(pair)}: ${offered.reason}`);
      else offers.push(offered);
      continue;
    }
    const reason = deps.unavailable(session);
    const offer = reason ? undefined : x402Offer(session, chain);
    if (!offer) {
      skipped.push(`${pairName(pair)}: ${reason ?? 'no x402 offer for this token'}`);
      continue;
    }
    const address = terms.attribution === 'address';
    const amount = address
      ? terms.amount
      : await previewDueAmount(deps.store, { chain: pair.chain, currency: pair.currency, payTo: terms.payTo, amount: terms.amount, decimals: terms.decimals });
    if (amount === undefined) {
      skipped.push(`${pairName(pair)}: every due amount of this price on the wallet is held by open sessions`);
      continue;
    }
    const payTo = address ? depositAddressFor({ payTo: terms.payTo, sessionId: choice.id }) : terms.payTo;
    offers.push({ pair, offer, requirements: requirementsFor(offer, { payTo, amount, secondsLeft }), priced });
  }
  return { offers, skipped };
}

/** A Solana option's offer (Solana has no deposit addresses: the wallet, at the due amount the choice would pick now). */
async function solanaOffer(
  deps: ChoiceX402Deps,
  option: {
    pair: PaymentOption;
    terms: Awaited<ReturnType<typeof checkSessionTerms>>;
    session: { chain: ChainName; livemode: boolean; tokenAddresses: readonly string[] };
    secondsLeft: number;
    priced: Priced | undefined;
  },
): Promise<ChoiceOffer | { reason: string }> {
  const { pair, terms } = option;
  const amount = await previewDueAmount(deps.store, {
    chain: pair.chain,
    currency: pair.currency,
    payTo: terms.payTo,
    amount: terms.amount,
    decimals: terms.decimals,
  });
  if (amount === undefined) return { reason: 'every due amount of this price on the wallet is held by open sessions' };
  const svm = deps.svm.choiceRequirements(
    { ...option.session, tokenAddresses: [...option.session.tokenAddresses] },
    { payTo: terms.payTo, amount, secondsLeft: option.secondsLeft },
  );
  if ('reason' in svm) return svm;
  // The 402 lists SVM requirements as they are (their `extra` is { feePayer }).
  return { pair, offer: undefined, requirements: svm.requirements as unknown as PaymentRequirements, priced: option.priced, svm };
}

/** Whether a payment header pays a Solana requirement (its `accepted.network`), read without trusting anything else in it. */
function paysSolana(header: string): boolean {
  try {
    const raw = JSON.parse(Buffer.from(header.trim(), 'base64').toString('utf8')) as { accepted?: { network?: unknown } };
    return typeof raw.accepted?.network === 'string' && raw.accepted.network.startsWith('solana:');
  } catch {
    return false;
  }
}

/** The option a payload pays: its network, and its token (Permit2 names it; EIP-3009 is the option's EIP-3009 token), and `accepted.asset` when sent. */
export function offerOfPayload(offers: ChoiceOffer[], payload: PaymentPayload): (ChoiceOffer & { offer: X402Offer }) | undefined {
  const same = (a: string | undefined, b: string) => a === undefined || a.toLowerCase() === b.toLowerCase();
  return offers.find(
    (candidate): candidate is ChoiceOffer & { offer: X402Offer } =>
      candidate.offer !== undefined &&
      candidate.offer.network === payload.network &&
      same(payload.accepted?.asset, candidate.offer.asset) &&
      (payload.permit2 ? candidate.offer.method === 'permit2' && same(payload.permit2.token, candidate.offer.asset) : candidate.offer.method === 'eip3009'),
  );
}

/** A waiting session's x402 answer: the 402 listing its options, or the settlement of a payload for one of them. */
export async function answerWaiting(
  deps: ChoiceX402Deps,
  choice: PendingChoice & { merchantName: string },
  payment: { header: string; version: 1 | 2 } | undefined,
  quote?: QuoteForPair,
): Promise<SessionAnswer> {
  if (choiceExpired(choice)) throw new GoneError(`session ${choice.id} is expired; it cannot be paid any more`);
  const { offers, skipped } = await choiceOffers(deps, choice, quote);
  if (!payment) {
    if (offers.length === 0) throw new UnavailableError(`x402 can pay none of this session's options here: ${skipped.join('; ')}`);
    return challenge(deps, choice, offers);
  }
  if (paysSolana(payment.header)) return answerSolana(deps, choice, payment, offers, quote);
  const payload = readPaymentHeader(payment.header);
  const chosen = offerOfPayload(offers, payload);
  if (!chosen) {
    const onNetwork = offers.some(({ offer }) => offer?.network === payload.network);
    const refusal = {
      reason: onNetwork ? REASONS.asset : REASONS.network,
      message: `this payment is for no option of session ${choice.id} that x402 can pay here (${offers.map(({ pair }) => pairName(pair)).join(', ') || 'none'})`,
    };
    return challenge(deps, choice, offers, refusal);
  }
  if (payload.paymentId) await holdPaymentId(deps.store, { merchantId: choice.merchantId, paymentId: payload.paymentId, payloadHash: signatureHash(payload) });
  try {
    const outcome = await settleOnce(deps.ctx, {
      offer: chosen.offer,
      requirements: chosen.requirements,
      payload,
      target: { sessionId: choice.id, merchantId: choice.merchantId, livemode: choice.livemode, source: 'resource' },
      prepare: (sql) => fixChoice(sql, deps.choiceConfig, choice.id, chosen),
    });
    if (!outcome.ok) return afterRefusal(deps, choice, outcome.refusal, quote);
    return deps.answerPaid(choice.id, outcome.settlement, chosen.offer.network, payment.version);
  } catch (error) {
    if (!(error instanceof ChoiceRefused)) throw error;
    deps.ctx.metrics.settlements.inc({ chain: chosen.offer.chain, outcome: 'refused' });
    return afterRefusal(deps, choice, error.refusal, quote);
  }
}

/** A payload for a Solana option: settled through svm/ with the same choice step in the row's transaction. */
async function answerSolana(
  deps: ChoiceX402Deps,
  choice: PendingChoice & { merchantName: string },
  payment: { header: string; version: 1 | 2 },
  offers: ChoiceOffer[],
  quote?: QuoteForPair,
): Promise<SessionAnswer> {
  const asset = (JSON.parse(Buffer.from(payment.header.trim(), 'base64').toString('utf8')) as { accepted?: { asset?: unknown } }).accepted?.asset;
  const chosen = offers.find((candidate) => candidate.svm && candidate.svm.offer.asset === asset);
  if (!chosen?.svm) {
    const refusal = {
      reason: offers.some((candidate) => candidate.svm) ? REASONS.asset : REASONS.network,
      message: `this payment is for no option of session ${choice.id} that x402 can pay here (${offers.map(({ pair }) => pairName(pair)).join(', ') || 'none'})`,
    };
    return challenge(deps, choice, offers, refusal);
  }
  try {
    const outcome = await deps.svm.settleChoice({
      offer: chosen.svm.offer,
      requirements: chosen.svm.requirements,
      header: payment.header,
      target: { sessionId: choice.id, merchantId: choice.merchantId, livemode: choice.livemode },
      prepare: (sql) => fixChoice(sql, deps.choiceConfig, choice.id, chosen),
    });
    if (!outcome.ok) return afterRefusal(deps, choice, outcome.refusal, quote);
    return deps.answerPaid(choice.id, outcome.settlement, chosen.svm.offer.network, payment.version);
  } catch (error) {
    if (!(error instanceof ChoiceRefused)) throw error;
    deps.ctx.metrics.settlements.inc({ chain: 'solana', outcome: 'refused' });
    return afterRefusal(deps, choice, error.refusal, quote);
  }
}

/**
 * In the settlement row's transaction: fixes the choice of the payload's option (or finds it
 * made), and checks that the session it makes asks exactly what was signed. Throws
 * {@link ChoiceRefused} otherwise, which rolls the choice back.
 */
async function fixChoice(sql: Sql, config: ChoiceConfig, id: string, chosen: ChoiceOffer): Promise<string> {
  let session: Session;
  try {
    ({ session } = await chooseOption(sql, { id, pair: chosen.pair, config, ...(chosen.priced ? { priced: chosen.priced } : {}) }));
  } catch (error) {
    if (error instanceof ConflictError || error instanceof InvalidRequestError || error instanceof GoneError || error instanceof NotFoundError)
      throw new ChoiceRefused({ reason: REASONS.notPayable, message: error.shortMessage });
    throw error;
  }
  const signed = chosen.requirements;
  if (session.status !== 'created' || session.amountReceived > 0n || session.amountPending > 0n)
    throw new ChoiceRefused({ reason: REASONS.notPayable, message: `session ${id} is ${session.status} and asks for nothing more` });
  if (payerAddress(session).toLowerCase() !== signed.payTo.toLowerCase())
    throw new ChoiceRefused({ reason: REASONS.recipient, message: `session ${id} is now paid at ${payerAddress(session)}; fetch the resource again` });
  if (session.amountDue !== BigInt(signed.amount))
    throw new ChoiceRefused({
      reason: REASONS.value,
      message: `session ${id} asks ${session.amountDue} base units of ${pairName(chosen.pair)} now (another session took ${signed.amount} meanwhile); fetch the resource again`,
    });
  return session.id;
}

/** The 402 after a refusal: the chosen session's own answer when the choice is made by now, else the options again. */
async function afterRefusal(
  deps: ChoiceX402Deps,
  choice: PendingChoice & { merchantName: string },
  refusal: Refusal,
  quote?: QuoteForPair,
): Promise<SessionAnswer> {
  const { rows } = await deps.store.query('SELECT chosen_at IS NOT NULL AS chosen FROM session_choices WHERE id = $1', [choice.id]);
  if (rows[0]?.chosen) return deps.answerChosen(choice.id, refusal);
  return challenge(deps, choice, (await choiceOffers(deps, choice, quote)).offers, refusal);
}

function challenge(deps: ChoiceX402Deps, choice: PendingChoice & { merchantName: string }, offers: ChoiceOffer[], refusal?: Refusal): SessionAnswer {
  const accepts = offers.map(({ requirements }) => requirements);
  // x402 v1 names no Solana network: v1 clients see the EVM options only.
  const acceptsV1 = offers.filter(({ svm }) => !svm).map(({ requirements }) => requirements);
  const resource = {
    url: `${deps.publicUrl()}/checkout/${choice.id}/x402`,
    description: `Payment ${choice.id} to ${choice.merchantName}, in one of ${offers.map(({ pair }) => pairName(pair)).join(', ')}${choice.livemode ? '' : ' (sandbox: test network, fake token)'}`,
  };
  const error = refusal
    ? `${refusal.reason}: ${refusal.message}`
    : 'payment required: sign the exact authorization of one entry in accepts (paying it chooses that chain and token) and send it in PAYMENT-SIGNATURE';
  return {
    kind: 'required',
    required: paymentRequired({ ...resource, accepts, error }),
    v1: { x402Version: 1, error, accepts: requirementsV1(acceptsV1, resource) },
    ...(refusal ? { reason: refusal.reason } : {}),
  };
}
