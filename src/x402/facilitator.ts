import { isAddressEqual, type Address } from 'viem';
import type { Sql } from '../store/index.ts';
import type { ChainConfig, TokenConfig } from '../internal/chains.ts';
import type { ChainName } from '../internal/config.ts';
import { badRequest } from '../internal/errors.ts';
import { formatAmount, parseAmount } from '../internal/money.ts';
import { AMOUNT_LIMITS, SETTLEMENT_MIN_AMOUNT } from '../payments/terms.ts';
import { SANDBOX_EVM_CHAIN_IDS } from '../checkout/uris.ts';
import { listWallets } from '../accounts/wallets.ts';
import { createSession } from '../payments/sessions.ts';
import { REASONS, type Refusal } from './authorization.ts';
import { x402Offer, requirementsFor, MAX_TIMEOUT_SECONDS, type X402Offer } from './requirements.ts';
import { caip2, readPaymentPayload, v1NetworkName, type PaymentPayload, type PaymentRequirements } from './wire.ts';

/**
 * The facilitator endpoints' domain (spec §7: `/verify`, `/settle`, `/supported`), for x402
 * resource servers of a merchant (built with @x402/express, @x402/hono, …) that settle through
 * this gateway into the merchant's own wallet. The merchant's API key decides the mode: a live
 * key settles real authorizations with the relayer, a test key the sandbox's fake token only.
 */

/** `POST /x402/verify` and `/settle` bodies, as @x402/core's HTTPFacilitatorClient sends them. */
export interface FacilitatorRequest {
  x402Version: number;
  paymentPayload: unknown;
  paymentRequirements: unknown;
}

/** A facilitator request read: the payload, the requirements as this gateway rebuilt them, the offer. */
export interface FacilitatorPayment {
  payload: PaymentPayload;
  requirements: PaymentRequirements;
  offer: X402Offer;
}

const UINT = /^\d{1,78}$/;

/** The chain whose EIP-155 id (mainnet for live keys, the test network for test keys) the network names. */
function chainOfNetwork(network: string, livemode: boolean, chains: Record<ChainName, ChainConfig>): ChainConfig | undefined {
  const match = /^eip155:(\d+)$/.exec(network) ?? undefined;
  const v1 = match ? undefined : Object.values(chains).find((chain) => v1NetworkName(caip2(Number(chain.chainId))) === network);
  const id = match ? Number(match[1]) : v1 ? Number(v1.chainId) : undefined;
  if (id === undefined) return undefined;
  return Object.values(chains).find(
    (chain) => chain.kind === 'evm' && chain.name !== 'solana' && (livemode ? chain.chainId === id : SANDBOX_EVM_CHAIN_IDS[chain.name] === id),
  );
}

/**
 * Reads a facilitator request. The requirements the resource server sent are rebuilt from this
 * gateway's chain config (the token's EIP-712 domain is ours, never the caller's), keeping only
 * what the merchant chooses: the amount, the wallet and the timeout.
 * @returns the payment, or a refusal (`isValid: false`) for requirements this gateway does not offer.
 * @throws {InvalidRequestError} for a body that cannot be read.
 */
export function readFacilitatorRequest(
  body: FacilitatorRequest,
  params: { livemode: boolean; chains: Record<ChainName, ChainConfig> },
): FacilitatorPayment | { refusal: Refusal; payload: PaymentPayload } {
  const payload = readPaymentPayload(body.paymentPayload);
  const raw = body.paymentRequirements as Record<string, unknown>;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw badRequest('paymentRequirements must be an object');
  const amount = raw.amount ?? raw.maxAmountRequired;
  if (typeof amount !== 'string' || !UINT.test(amount) || BigInt(amount) === 0n)
    throw badRequest('paymentRequirements.amount must be a positive integer of base units as text');
  for (const field of ['network', 'asset', 'payTo'] as const)
    if (typeof raw[field] !== 'string') throw badRequest(`paymentRequirements.${field} must be a string`);
  if (raw.scheme !== 'exact') return { payload, refusal: { reason: REASONS.scheme, message: `scheme ${String(raw.scheme)} is not offered; only exact` } };
  const chain = chainOfNetwork(raw.network as string, params.livemode, params.chains);
  const mode = params.livemode ? 'a live key' : 'a test key (sandbox: test networks only)';
  if (!chain) return { payload, refusal: { reason: REASONS.network, message: `network ${String(raw.network)} is not offered with ${mode}` } };
  // Any of the chain's tokens: EIP-3009 where the token has it, Permit2 for the others.
  const offer = chain.tokens
    .map((token) => x402Offer({ chain: chain.name, livemode: params.livemode, tokenAddresses: [token.address] }, chain))
    .find((candidate) => candidate && sameAddress(candidate.asset, raw.asset as string));
  if (!offer)
    return {
      payload,
      refusal: { reason: REASONS.asset, message: `asset ${String(raw.asset)} is not a token this gateway settles on ${chain.name}` },
    };
  const outside = amountOutsideLimits(BigInt(amount), offer.token.decimals);
  if (outside) return { payload, refusal: { reason: REASONS.value, message: outside } };
  const timeout = typeof raw.maxTimeoutSeconds === 'number' && raw.maxTimeoutSeconds > 0 ? raw.maxTimeoutSeconds : MAX_TIMEOUT_SECONDS;
  const requirements = requirementsFor(offer, { payTo: raw.payTo as string, amount: BigInt(amount), secondsLeft: timeout });
  // v1 payloads name the network by name; compare in v2's terms.
  return { payload: { ...payload, network: payload.x402Version === 1 ? requirements.network : payload.network }, requirements, offer };
}

/**
 * Why a facilitator payment of `amount` base units cannot be recorded as a session, or undefined:
 * below {@link SETTLEMENT_MIN_AMOUNT} (0.001 token: a settlement's session is bound to its
 * transaction by a claim, so it takes less than a session's 0.01, but below 0.001 the relayer's
 * gas costs more than the payment moves) or above AMOUNT_LIMITS.max. Checked by `/verify` too, so
 * a payment it calls valid is not then refused by `/settle`.
 */
export function amountOutsideLimits(amount: bigint, decimals: number): string | undefined {
  if (amount < parseAmount(SETTLEMENT_MIN_AMOUNT, decimals))
    return `the amount ${formatAmount(amount, decimals)} is below this gateway's minimum x402 settlement of ${SETTLEMENT_MIN_AMOUNT} (${parseAmount(SETTLEMENT_MIN_AMOUNT, decimals)} base units): below it the settlement's gas costs about as much as the payment moves`;
  if (amount > parseAmount(AMOUNT_LIMITS.max, decimals))
    return `the amount ${formatAmount(amount, decimals)} is above this gateway's maximum payment of ${AMOUNT_LIMITS.max}`;
  return undefined;
}

/** Refuses a payTo that is not one of the merchant's verified wallets on the chain: a key cannot settle into someone else's wallet. */
export async function checkPayTo(sql: Sql, params: { merchantId: string; offer: X402Offer; payTo: string }): Promise<Refusal | undefined> {
  const wallets = await listWallets(sql, { merchantId: params.merchantId, chain: params.offer.chain });
  if (wallets.some((wallet) => wallet.verified && sameAddress(wallet.address, params.payTo))) return undefined;
  return { reason: REASONS.recipient, message: `payTo ${params.payTo} is not a verified wallet of this merchant on ${params.offer.chain}` };
}

/** What a facilitator settlement's session is made of, on any chain (EVM here, Solana in svm/facilitator.ts). */
export interface FacilitatorSessionTerms {
  offer: { chain: ChainName; token: Pick<TokenConfig, 'currency' | 'decimals'> };
  requirements: { amount: string; payTo: string };
  /** The payer's address, recorded in the session's metadata. */
  payer: string;
}

/**
 * Creates the session a facilitator settlement is recorded as (the same domain function as
 * `POST /sessions`), in the settlement's transaction. Its due amount is the authorized value
 * exactly: the payer signed that value, and the settlement binds the transfer to this session.
 */
export async function createFacilitatorSession(
  sql: Sql,
  params: {
    merchantId: string;
    livemode: boolean;
    payment: FacilitatorSessionTerms;
    chains: Record<ChainName, ChainConfig>;
    monitorWindowSeconds: number;
    feeBps: number;
    liveChains: readonly ChainName[];
  },
): Promise<string> {
  const { offer, requirements, payer } = params.payment;
  const session = await createSession(sql, {
    merchantId: params.merchantId,
    livemode: params.livemode,
    chain: offer.chain,
    currency: offer.token.currency,
    amount: formatAmount(BigInt(requirements.amount), offer.token.decimals),
    // Its own, lower minimum (the same one amountOutsideLimits checks): it is claimed, not matched by amount.
    minimum: SETTLEMENT_MIN_AMOUNT,
    ...(params.livemode ? { merchantWallet: requirements.payTo } : {}),
    // On the wallet the payer paid, whatever the merchant's default: the resource server's
    // requirements named that wallet, and a deposit address of the session's own would leave the
    // claimed transfer paying another address than the session's (it never confirmed).
    attribution: 'amount',
    expiresIn: 3600,
    metadata: { source: 'x402-facilitator', payer },
    monitorWindowSeconds: params.monitorWindowSeconds,
    feeBps: params.feeBps,
    liveChains: params.liveChains,
    chains: params.chains,
  });
  await sql.query('UPDATE payment_sessions SET amount_due = amount WHERE id = $1', [session.id]);
  return session.id;
}

/** `GET /x402/supported`: what this gateway settles for a key of this mode. */
export function supportedKinds(params: {
  livemode: boolean;
  chains: Record<ChainName, ChainConfig>;
  relayers: Partial<Record<ChainName, { address: string }>>;
  /** Solana's kind (svm/facilitator.ts), when its fee payer is configured: `extra.feePayer` is what the payer's transaction names as fee payer. */
  svm?: { x402Version: number; scheme: 'exact'; network: string; extra: { feePayer: string } } | undefined;
}) {
  const kinds: { x402Version: number; scheme: 'exact'; network: string; extra?: Record<string, string> }[] = [];
  const signers = new Set<string>();
  for (const chain of Object.values(params.chains)) {
    if (chain.kind !== 'evm' || chain.name === 'solana') continue;
    const offer = x402Offer({ chain: chain.name, livemode: params.livemode, tokenAddresses: chain.tokens.map((token) => token.address) }, chain);
    if (!offer) continue;
    const relayer = params.relayers[chain.name];
    if (params.livemode && !relayer) continue;
    if (relayer) signers.add(relayer.address);
    kinds.push({ x402Version: 2, scheme: 'exact', network: offer.network });
    const v1 = v1NetworkName(offer.network);
    if (v1) kinds.push({ x402Version: 1, scheme: 'exact', network: v1 });
  }
  const evm = { 'eip155:*': [...signers] };
  if (!params.svm) return { kinds, extensions: [] as string[], signers: evm as Record<string, string[]> };
  kinds.push(params.svm);
  return { kinds, extensions: [] as string[], signers: { ...evm, 'solana:*': [params.svm.extra.feePayer] } as Record<string, string[]> };
}

function sameAddress(a: string, b: string): boolean {
  try {
    return isAddressEqual(a as Address, b as Address);
  } catch {
    return false;
  }
}
