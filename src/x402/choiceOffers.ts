import type { Store } from '../store/index.ts';
import type { ChainConfig } from '../internal/chains.ts';
import type { ChainName } from '../internal/config.ts';
import { ConflictError, InvalidRequestError, UnavailableError, UnprocessableError } from '../internal/errors.ts';
import type { ChoiceConfig, PendingChoice } from '../payments/choices.ts';
import { pairName, type PaymentOption } from '../payments/options.ts';
import type { Priced } from '../payments/choicePrices.ts';
import type { FiatPrice } from '../pricing/index.ts';
import { checkSessionTerms } from '../payments/terms.ts';
import { depositAddressFor } from '../payments/attribution.ts';
import { previewDueAmount } from '../payments/duePreview.ts';
import { requirementsFor, x402Offer, type X402Offer } from './requirements.ts';
import type { PaymentPayload, PaymentRequirements } from './wire.ts';
import type { SvmX402 } from './svm/index.ts';
import type { SvmOffer, SvmRequirements } from './svm/offer.ts';
import { solanaOffer } from './choiceSolana.ts';

/**
 * The options of a waiting session x402 can pay here (docs/agents.md, "Waiting sessions"), each
 * with the requirements the session for that pair would ask: the option's token, the wallet (or,
 * in address mode, the deposit address, which depends only on the wallet and the session id, both
 * known before the choice), and the amount in that token's base units (in amount mode the due
 * amount the choice would pick now: duePreview.ts).
 */

/** What every option offer carries, EVM or Solana. */
interface ChoiceOfferBase {
  pair: PaymentOption;
  /** The requirements the 402 lists for this option (a Solana option's SVM requirements as they are). */
  requirements: PaymentRequirements;
  /** A fiat-priced session's conversion for this pair, quoted with this 402 and passed to the choice. */
  priced?: Priced | undefined;
}

/** An EVM option: its x402 offer (EIP-3009 or Permit2). */
export interface EvmChoiceOffer extends ChoiceOfferBase {
  kind: 'evm';
  offer: X402Offer;
}

/** A Solana option: its SVM offer and the SVM requirements the payer signs (`requirements` holds the same, for the 402). */
export interface SvmChoiceOffer extends ChoiceOfferBase {
  kind: 'svm';
  offer: SvmOffer;
  svmRequirements: SvmRequirements;
}

/** One option x402 can pay, with the requirements a payer signs for it; `kind` tells the EVM and Solana options apart. */
export type ChoiceOffer = EvmChoiceOffer | SvmChoiceOffer;

/**
 * Converts a fiat price for a pair (the API's `amountOf` over its feed reader: Chainlink live,
 * fixed rates in the sandbox). Given by the HTTP route with each request; without it a
 * fiat-priced waiting session lists no option.
 */
export type QuoteForPair = (price: FiatPrice, pair: PaymentOption, livemode: boolean) => Promise<Priced>;

/** What listing a waiting session's options reads of the stage. */
export interface ChoiceOfferDeps {
  store: Store;
  chains: Record<ChainName, ChainConfig>;
  choiceConfig: ChoiceConfig;
  /** Solana's `exact` scheme for Solana options (svm/index.ts). */
  svm: Pick<SvmX402, 'choiceRequirements'>;
  /** Why x402 cannot take a session with these terms here (relayer, sandbox, Permit2), or undefined. */
  unavailable(session: { livemode: boolean; chain: ChainName; tokenAddresses: readonly string[] }): string | undefined;
}

/** The terms a pair of a waiting session would have (checkSessionTerms). */
export type OptionTerms = Awaited<ReturnType<typeof checkSessionTerms>>;

/** An option whose terms passed, to be made an offer (or skipped with a reason). */
export interface OptionToOffer {
  pair: PaymentOption;
  terms: OptionTerms;
  /** The single-pair session the choice would make, as availability reads it. */
  session: { chain: ChainName; livemode: boolean; tokenAddresses: string[] };
  secondsLeft: number;
  priced: Priced | undefined;
}

/**
 * A waiting session priced in a fiat currency converts at the choice (src/pricing). Its 402 quotes
 * each option when it is fetched, and settlement quotes again: a payload is settled only when its
 * signed amount is what the feeds give at that moment (they move on a deviation threshold or a
 * heartbeat of hours, so the minute between the two rarely changes it; when it does, the payer
 * gets a fresh 402). The chosen session records that quote, as a choice on the page does.
 */

/**
 * The options of `choice` x402 can pay in this process, with their requirements now; `skipped`
 * says why each other option is not listed (for the 503 when none is).
 */
export async function choiceOffers(deps: ChoiceOfferDeps, choice: PendingChoice, quote?: QuoteForPair): Promise<{ offers: ChoiceOffer[]; skipped: string[] }> {
  const offers: ChoiceOffer[] = [];
  const skipped: string[] = [];
  const secondsLeft = (choice.expiresAt.getTime() - choice.now.getTime()) / 1000;
  // A fiat price: every option's conversion at once (each bounded by the route's timeout), not one after another.
  const quotes = choice.price && quote ? await Promise.allSettled(choice.paymentOptions.map((pair) => quote(choice.price!, pair, choice.livemode))) : undefined;
  for (const [index, pair] of choice.paymentOptions.entries()) {
    const chain = deps.chains[pair.chain];
    if (!chain) continue;
    let priced: Priced | undefined;
    let terms: OptionTerms;
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
    const option: OptionToOffer = { pair, terms, session: { chain: pair.chain, livemode: choice.livemode, tokenAddresses: terms.tokens }, secondsLeft, priced };
    const offered = chain.kind === 'solana' ? await solanaOffer(deps, option) : await evmOffer(deps, chain, choice.id, option);
    if ('reason' in offered) skipped.push(`${pairName(pair)}: ${offered.reason}`);
    else offers.push(offered);
  }
  return { offers, skipped };
}

/** An EVM option's offer: the wallet at the due amount the choice would pick now, or in address mode the session's deposit address. */
async function evmOffer(deps: ChoiceOfferDeps, chain: ChainConfig, sessionId: string, option: OptionToOffer): Promise<EvmChoiceOffer | { reason: string }> {
  const { pair, terms, session } = option;
  const reason = deps.unavailable(session);
  const offer = reason ? undefined : x402Offer(session, chain);
  if (!offer) return { reason: reason ?? 'no x402 offer for this token' };
  const address = terms.attribution === 'address';
  const amount = address
    ? terms.amount
    : await previewDueAmount(deps.store, { chain: pair.chain, currency: pair.currency, payTo: terms.payTo, amount: terms.amount, decimals: terms.decimals });
  if (amount === undefined) return { reason: 'every due amount of this price on the wallet is held by open sessions' };
  const payTo = address ? depositAddressFor({ payTo: terms.payTo, sessionId }) : terms.payTo;
  return { kind: 'evm', pair, offer, requirements: requirementsFor(offer, { payTo, amount, secondsLeft: option.secondsLeft }), priced: option.priced };
}

/** The EVM option a payload pays: its network, and its token (Permit2 names it; EIP-3009 is the option's EIP-3009 token), and `accepted.asset` when sent. */
export function offerOfPayload(offers: ChoiceOffer[], payload: PaymentPayload): EvmChoiceOffer | undefined {
  const same = (a: string | undefined, b: string) => a === undefined || a.toLowerCase() === b.toLowerCase();
  return offers.find(
    (candidate): candidate is EvmChoiceOffer =>
      candidate.kind === 'evm' &&
      candidate.offer.network === payload.network &&
      same(payload.accepted?.asset, candidate.offer.asset) &&
      (payload.permit2 ? candidate.offer.method === 'permit2' && same(payload.permit2.token, candidate.offer.asset) : candidate.offer.method === 'eip3009'),
  );
}
