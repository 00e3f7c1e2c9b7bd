import { previewDueAmount } from '../payments/duePreview.ts';
import type { PendingChoice } from '../payments/choices.ts';
import type { Store } from '../store/index.ts';
import { REASONS, type Refusal } from './authorization.ts';
import type { PaymentRequirements } from './wire.ts';
import type { SvmX402 } from './svm/index.ts';
import type { ChoiceOffer, OptionToOffer, SvmChoiceOffer } from './choiceOffers.ts';
import { noOptionRefusal, type ChosenPayment } from './choiceSettle.ts';

/**
 * A waiting session's Solana options (docs/agents.md, "Waiting sessions"): each listed as a
 * single-pair Solana requirement, a payload matched by its `accepted.asset` and settled through
 * svm/ with the choice fixed in the settlement row's transaction (choiceSettle.ts).
 */

/** A Solana option's offer (Solana has no deposit addresses: the wallet, at the due amount the choice would pick now). */
export async function solanaOffer(
  deps: { store: Store; svm: Pick<SvmX402, 'choiceRequirements'> },
  option: OptionToOffer,
): Promise<SvmChoiceOffer | { reason: string }> {
  const { pair, terms } = option;
  const amount = await previewDueAmount(deps.store, {
    chain: pair.chain,
    currency: pair.currency,
    payTo: terms.payTo,
    amount: terms.amount,
    decimals: terms.decimals,
  });
  if (amount === undefined) return { reason: 'every due amount of this price on the wallet is held by open sessions' };
  const svm = deps.svm.choiceRequirements(option.session, { payTo: terms.payTo, amount, secondsLeft: option.secondsLeft });
  if ('reason' in svm) return svm;
  // The 402 lists SVM requirements as they are (their `extra` is { feePayer }).
  return {
    kind: 'svm',
    pair,
    offer: svm.offer,
    svmRequirements: svm.requirements,
    requirements: svm.requirements as unknown as PaymentRequirements,
    priced: option.priced,
  };
}

/** Whether a payment header pays a Solana requirement (its `accepted.network`), read without trusting anything else in it. */
export function paysSolana(header: string): boolean {
  try {
    const raw = JSON.parse(Buffer.from(header.trim(), 'base64').toString('utf8')) as { accepted?: { network?: unknown } };
    return typeof raw.accepted?.network === 'string' && raw.accepted.network.startsWith('solana:');
  } catch {
    return false;
  }
}

/**
 * The Solana option a payment header pays (by its `accepted.asset`) and how to settle it through
 * svm/; or the refusal when it pays none of the listed options.
 */
export function solanaPayment(
  deps: { svm: Pick<SvmX402, 'settleChoice'> },
  choice: Pick<PendingChoice, 'id' | 'merchantId' | 'livemode'>,
  offers: ChoiceOffer[],
  header: string,
): ChosenPayment | { refusal: Refusal } {
  const asset = (JSON.parse(Buffer.from(header.trim(), 'base64').toString('utf8')) as { accepted?: { asset?: unknown } }).accepted?.asset;
  const chosen = offers.find((candidate): candidate is SvmChoiceOffer => candidate.kind === 'svm' && candidate.offer.asset === asset);
  if (!chosen) return noOptionRefusal(choice.id, offers, offers.some((candidate) => candidate.kind === 'svm') ? REASONS.asset : REASONS.network);
  return {
    chosen,
    settle: (prepare) =>
      deps.svm.settleChoice({
        offer: chosen.offer,
        requirements: chosen.svmRequirements,
        header,
        target: { sessionId: choice.id, merchantId: choice.merchantId, livemode: choice.livemode },
        prepare,
      }),
  };
}
