import { GoneError, UnavailableError } from '../internal/errors.ts';
import { choiceExpired, type PendingChoice } from '../payments/choices.ts';
import { pairName } from '../payments/options.ts';
import { REASONS, type Refusal } from './authorization.ts';
import { holdPaymentId } from './paymentId.ts';
import { paymentRequired, requirementsV1 } from './requirements.ts';
import { settleOnce, type SettleContext } from './settle.ts';
import { signatureHash, type Settlement } from './settlements.ts';
import { readPaymentHeader } from './wire.ts';
import type { SessionAnswer } from './index.ts';
import type { SvmX402 } from './svm/index.ts';
import { choiceOffers, offerOfPayload, type ChoiceOffer, type ChoiceOfferDeps, type QuoteForPair } from './choiceOffers.ts';
import { paysSolana, solanaPayment } from './choiceSolana.ts';
import { ChoiceRefused, fixChoice, noOptionRefusal, type ChosenPayment } from './choiceSettle.ts';

/**
 * x402 for a session waiting for its customer's choice of (chain, currency) (docs/agents.md,
 * "Waiting sessions"). The 402 lists one `accepts` entry per option x402 can pay here, each as
 * the session for that pair would ask (choiceOffers.ts). Settling a payload fixes the choice of
 * its option in the transaction that inserts the settlement row, before anything is sent
 * (choiceSettle.ts); EVM payloads settle through settle.ts, Solana ones through svm/
 * (choiceSolana.ts).
 */

/** What the waiting sessions' x402 needs from the stage. */
export interface ChoiceX402Deps extends ChoiceOfferDeps {
  ctx: SettleContext;
  publicUrl: () => string;
  /** Solana's `exact` scheme for Solana options (svm/index.ts). */
  svm: Pick<SvmX402, 'choiceRequirements' | 'settleChoice'>;
  /** The answer for a session that is chosen by now: its single-pair x402 answer, with `refusal` when one was sent and refused. */
  answerChosen(sessionId: string, refusal: Refusal): Promise<SessionAnswer>;
  /** The 200 of a settled payment: `PAYMENT-RESPONSE` and the (now chosen) session's state. */
  answerPaid(sessionId: string, settlement: Settlement, network: string, version: 1 | 2): Promise<SessionAnswer>;
}

type WaitingChoice = PendingChoice & { merchantName: string };

/** A waiting session's x402 answer: the 402 listing its options, or the settlement of a payload for one of them. */
export async function answerWaiting(
  deps: ChoiceX402Deps,
  choice: WaitingChoice,
  payment: { header: string; version: 1 | 2 } | undefined,
  quote?: QuoteForPair,
): Promise<SessionAnswer> {
  if (choiceExpired(choice)) throw new GoneError(`session ${choice.id} is expired; it cannot be paid any more`);
  const { offers, skipped } = await choiceOffers(deps, choice, quote);
  if (!payment) {
    if (offers.length === 0) throw new UnavailableError(`x402 can pay none of this session's options here: ${skipped.join('; ')}`);
    return challenge(deps, choice, offers);
  }
  const paid = paysSolana(payment.header) ? solanaPayment(deps, choice, offers, payment.header) : await evmPayment(deps, choice, offers, payment.header);
  if ('refusal' in paid) return challenge(deps, choice, offers, paid.refusal);
  return settleChosen(deps, choice, paid, payment.version, quote);
}

/** The EVM option a payment header pays (offerOfPayload) and how to settle it through settle.ts; or the refusal when it pays none. */
async function evmPayment(deps: ChoiceX402Deps, choice: WaitingChoice, offers: ChoiceOffer[], header: string): Promise<ChosenPayment | { refusal: Refusal }> {
  const payload = readPaymentHeader(header);
  const chosen = offerOfPayload(offers, payload);
  if (!chosen) {
    const onNetwork = offers.some((candidate) => candidate.kind === 'evm' && candidate.offer.network === payload.network);
    return noOptionRefusal(choice.id, offers, onNetwork ? REASONS.asset : REASONS.network);
  }
  if (payload.paymentId) await holdPaymentId(deps.store, { merchantId: choice.merchantId, paymentId: payload.paymentId, payloadHash: signatureHash(payload) });
  return {
    chosen,
    settle: (prepare) =>
      settleOnce(deps.ctx, {
        offer: chosen.offer,
        requirements: chosen.requirements,
        payload,
        target: { sessionId: choice.id, merchantId: choice.merchantId, livemode: choice.livemode, source: 'resource' },
        prepare,
      }),
  };
}

/** Settles the chosen option with the choice fixed in the row's transaction; a refusal (there or by the chain) answers the 402 again. */
async function settleChosen(deps: ChoiceX402Deps, choice: WaitingChoice, paid: ChosenPayment, version: 1 | 2, quote?: QuoteForPair): Promise<SessionAnswer> {
  const { chosen } = paid;
  try {
    const outcome = await paid.settle((sql) => fixChoice(sql, deps.choiceConfig, choice.id, chosen));
    if (!outcome.ok) return afterRefusal(deps, choice, outcome.refusal, quote);
    return deps.answerPaid(choice.id, outcome.settlement, chosen.offer.network, version);
  } catch (error) {
    if (!(error instanceof ChoiceRefused)) throw error;
    deps.ctx.metrics.settlements.inc({ chain: chosen.offer.chain, outcome: 'refused' });
    return afterRefusal(deps, choice, error.refusal, quote);
  }
}

/** The 402 after a refusal: the chosen session's own answer when the choice is made by now, else the options again. */
async function afterRefusal(deps: ChoiceX402Deps, choice: WaitingChoice, refusal: Refusal, quote?: QuoteForPair): Promise<SessionAnswer> {
  const { rows } = await deps.store.query('SELECT chosen_at IS NOT NULL AS chosen FROM session_choices WHERE id = $1', [choice.id]);
  if (rows[0]?.chosen) return deps.answerChosen(choice.id, refusal);
  return challenge(deps, choice, (await choiceOffers(deps, choice, quote)).offers, refusal);
}

/** The 402 listing every option's requirements (with the refusal of a payload that was sent, if any). */
function challenge(deps: ChoiceX402Deps, choice: WaitingChoice, offers: ChoiceOffer[], refusal?: Refusal): SessionAnswer {
  const accepts = offers.map(({ requirements }) => requirements);
  // x402 v1 names no Solana network: v1 clients see the EVM options only.
  const acceptsV1 = offers.filter(({ kind }) => kind === 'evm').map(({ requirements }) => requirements);
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
