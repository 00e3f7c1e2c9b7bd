import type { ChainConfig, TokenConfig } from '../internal/chains.ts';
import type { ChainName } from '../internal/config.ts';
import { SANDBOX_EVM_CHAIN_IDS, sandboxToken } from '../checkout/uris.ts';
import type { Session } from '../payments/session.ts';
import { paymentIdentifierDeclaration } from './paymentId.ts';
import { caip2, v1NetworkName, type PaymentRequired, type PaymentRequirements, type PaymentRequirementsV1 } from './wire.ts';

/**
 * The longest authorization window offered: a payer's signature is good for this long at most
 * (@x402/evm signs `validBefore = now + maxTimeoutSeconds`). Five minutes covers a slow chain's
 * inclusion; a longer window would leave a signed transfer usable long after the payer moved on.
 */
export const MAX_TIMEOUT_SECONDS = 300;

/**
 * What a session pays with over x402, on an EVM chain: the first of its tokens that has EIP-3009
 * (`transferWithAuthorization`), else its first token through Permit2 and x402's proxy
 * (permit2/contracts.ts). Both are x402's `exact` scheme; `method` is the spec's
 * `assetTransferMethod`.
 */
export interface X402Offer {
  chain: ChainName;
  token: TokenConfig;
  method: 'eip3009' | 'permit2';
  /** The EIP-155 id the authorization is signed for: the chain's own, or its test network's for sandbox sessions. */
  chainId: number;
  network: string;
  /** The contract the payer signs for: the real token, or the sandbox's fake one (no code anywhere, so no real money can move). */
  asset: string;
}

/** The x402 offer of a session on an EVM chain (EIP-3009 first, else Permit2), or undefined on other chains. */
export function x402Offer(session: Pick<Session, 'chain' | 'livemode' | 'tokenAddresses'>, chain: ChainConfig): X402Offer | undefined {
  if (chain.kind !== 'evm' || chain.name === 'solana') return undefined;
  const tokens = chain.tokens.filter((candidate) => session.tokenAddresses.includes(candidate.address));
  const token = tokens.find((candidate) => candidate.eip3009) ?? tokens[0];
  if (!token) return undefined;
  const chainId = session.livemode ? (chain.chainId as number) : SANDBOX_EVM_CHAIN_IDS[chain.name];
  return {
    chain: chain.name,
    token,
    method: token.eip3009 ? 'eip3009' : 'permit2',
    chainId,
    network: caip2(chainId),
    asset: session.livemode ? token.address : sandboxToken(chain, token.address),
  };
}

/** `${publicUrl}/checkout/<id>/x402`: a session's x402 resource; null for sessions without an x402 offer. */
export function sessionX402Url(publicUrl: string, session: Pick<Session, 'id' | 'chain' | 'livemode' | 'tokenAddresses'>, chain: ChainConfig): string | null {
  return x402Offer(session, chain) ? `${publicUrl}/checkout/${encodeURIComponent(session.id)}/x402` : null;
}

/** The requirements of paying `amount` base units of the offer's token to `payTo`, with at most `secondsLeft` to do it. */
export function requirementsFor(offer: X402Offer, params: { payTo: string; amount: bigint; secondsLeft: number }): PaymentRequirements {
  return {
    scheme: 'exact',
    network: offer.network,
    amount: params.amount.toString(),
    asset: offer.asset,
    payTo: params.payTo,
    maxTimeoutSeconds: Math.max(1, Math.min(MAX_TIMEOUT_SECONDS, Math.floor(params.secondsLeft))),
    extra: offer.token.eip3009 ? { name: offer.token.eip3009.name, version: offer.token.eip3009.version } : { assetTransferMethod: 'permit2' },
  };
}

/** The v2 `PAYMENT-REQUIRED` value of a resource. */
export function paymentRequired(params: { url: string; description: string; accepts: PaymentRequirements[]; error?: string }): PaymentRequired {
  return {
    x402Version: 2,
    ...(params.error ? { error: params.error } : {}),
    resource: { url: params.url, description: params.description, mimeType: 'application/json' },
    accepts: params.accepts,
    extensions: paymentIdentifierDeclaration(),
  };
}

/** The same requirements as v1 clients read them from the 402 body (only on networks v1 names). */
export function requirementsV1(requirements: PaymentRequirements[], resource: { url: string; description: string }): PaymentRequirementsV1[] {
  return requirements.flatMap((requirement) => {
    const network = v1NetworkName(requirement.network);
    if (!network) return [];
    const { amount, ...rest } = requirement;
    return [{ ...rest, network, maxAmountRequired: amount, resource: resource.url, description: resource.description, mimeType: 'application/json' }];
  });
}
