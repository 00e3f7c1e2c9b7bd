import type { ChainConfig } from '../internal/chains.ts';
import { tokensFor } from '../internal/chains.ts';
import type { ChainName } from '../internal/config.ts';
import type { PendingChoice } from '../payments/choices.ts';
import type { PaymentOption } from '../payments/options.ts';
import { x402Offer } from './requirements.ts';

/**
 * A waiting session's `x402Url` (src/api/choiceViews.ts): `${publicUrl}/checkout/<id>/x402` when
 * x402 can pay at least one of its options in this process, else null, as a single-pair
 * session advertises only a URL that can be paid. Decided from the chains' tokens and the stage's
 * availability alone (views are built synchronously): the merchant's wallets and bridged-token
 * setting are read when the URL is fetched, so its 402 may list fewer options (choiceOffers.ts), and
 * answers 503 naming why when it can list none.
 */
export function waitingX402Url(ctx: WaitingCtx, choice: Pick<PendingChoice, 'id' | 'livemode' | 'paymentOptions' | 'terms'>): string | null {
  return waitingX402Pairs(ctx, choice).length > 0 ? `${ctx.publicUrl}/checkout/${encodeURIComponent(choice.id)}/x402` : null;
}

/** The options of a waiting session that its x402 challenge can list here (the chooser's `x402` flags), on the same grounds as {@link waitingX402Url}. */
export function waitingX402Pairs(ctx: WaitingCtx, choice: Pick<PendingChoice, 'livemode' | 'paymentOptions'>): PaymentOption[] {
  return choice.paymentOptions.filter((pair) => {
    const chain = ctx.chains[pair.chain];
    if (!chain) return false;
    const session = { chain: pair.chain, livemode: choice.livemode, tokenAddresses: tokensFor(chain, pair.currency).map((token) => token.address) };
    if (chain.kind === 'solana') return !ctx.svmUnavailable(session);
    return !ctx.unavailable(session) && x402Offer(session, chain) !== undefined;
  });
}

interface WaitingCtx {
  publicUrl: string;
  chains: Record<ChainName, ChainConfig>;
  unavailable(session: { livemode: boolean; chain: ChainName; tokenAddresses: readonly string[] }): string | undefined;
  /** Solana's: live sessions with the fee payer configured (svm/index.ts). */
  svmUnavailable(session: { livemode: boolean; chain: ChainName; tokenAddresses: string[] }): string | undefined;
}
