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
  offer: X402Offer;
  requirements: PaymentRequirements;
  /** A fiat-priced session's conversion for this pair, quoted with this 402 and passed to the choice. */
  priced?: Priced | undefined;
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
    if (chain?.kind !== 'evm') {
      // Solana's `exact` settles through svm/, which has no choice step yet: choose first (POST /checkout/{id}/choice), then pay the session's x402Url.
      skipped.push(`${pairName(pair)}: choose it first (POST /checkout/${choice.id}/choice), then pay the session's x402Url`);
      continue;
    }
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

/** The option a payload pays: its network, and its token (Permit2 names it; EIP-3009 is the option's EIP-3009 token), and `accepted.asset` when sent. */
export function offerOfPayload(offers: ChoiceOffer[], payload: PaymentPayload): ChoiceOffer | undefined {
  const same = (a: string | undefined, b: string) => a === undefined || a.toLowerCase() === b.toLowerCase();
  return offers.find(
    ({ offer }) =>
      offer.network === payload.network &&
      same(payload.accepted?.asset, offer.asset) &&
      (payload.permit2 ? offer.method === 'permit2' && same(payload.permit2.token, offer.asset) : offer.method === 'eip3009'),
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
  const payload = readPaymentHeader(payment.header);
  const chosen = offerOfPayload(offers, payload);
  if (!chosen) {
    const onNetwork = offers.some(({ offer }) => offer.network === payload.network);
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
    v1: { x402Version: 1, error, accepts: requirementsV1(accepts, resource) },
    ...(refusal ? { reason: refusal.reason } : {}),
  };
}
