import type { ChainConfig } from '../internal/chains.ts';
import { tokensFor } from '../internal/chains.ts';
import type { ChainName } from '../internal/config.ts';
import type { PendingChoice } from '../payments/choices.ts';
import { x402Offer } from './requirements.ts';

/**
 * A waiting session's `x402Url` (src/api/choiceViews.ts): `${publicUrl}/checkout/<id>/x402` when
 * x402 can pay at least one of its EVM options in this process, else null, as a single-pair
 * session advertises only a URL that can be paid. Decided from the chains' tokens and the stage's
 * availability alone (views are built synchronously): the merchant's wallets and bridged-token
 * setting are read when the URL is fetched, so its 402 may list fewer options (choice.ts), and
 * answers 503 naming why when it can list none.
 */
export function waitingX402Url(
  ctx: {
    publicUrl: string;
    chains: Record<ChainName, ChainConfig>;
    unavailable(session: { livemode: boolean; chain: ChainName; tokenAddresses: readonly string[] }): string | undefined;
  },
  choice: Pick<PendingChoice, 'id' | 'livemode' | 'paymentOptions'>,
): string | null {
  const payable = choice.paymentOptions.some((pair) => {
    const chain = ctx.chains[pair.chain];
    if (!chain || chain.kind !== 'evm') return false;
    const session = { chain: pair.chain, livemode: choice.livemode, tokenAddresses: tokensFor(chain, pair.currency).map((token) => token.address) };
    return !ctx.unavailable(session) && x402Offer(session, chain) !== undefined;
  });
  return payable ? `${ctx.publicUrl}/checkout/${encodeURIComponent(choice.id)}/x402` : null;
}
