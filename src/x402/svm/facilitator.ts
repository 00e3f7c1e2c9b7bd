import type { Sql, Store } from '../../store/index.ts';
import type { ChainConfig } from '../../internal/chains.ts';
import { badRequest } from '../../internal/errors.ts';
import { listWallets } from '../../accounts/wallets.ts';
import type { Refusal } from '../authorization.ts';
import { amountOutsideLimits, type FacilitatorRequest, type FacilitatorSessionTerms } from '../facilitator.ts';
import { holdPaymentId } from '../paymentId.ts';
import type { SettleResponse } from '../wire.ts';
import type { SvmSettleContext } from './inFlight.ts';
import { SOLANA_MAINNET, SVM_MAX_TIMEOUT_SECONDS, svmOffer, svmRequirements, type SvmOffer, type SvmRequirements } from './offer.ts';
import { readSvmPayment, svmPayloadHash, type SvmPaymentPayload } from './payload.ts';
import { SVM_REASONS } from './reasons.ts';
import { settleSvmOnce, verifySvmPayment } from './settle.ts';

/**
 * The facilitator endpoints (`/x402/verify`, `/x402/settle`, `/x402/supported`) for Solana's
 * `exact` scheme: a merchant's own resource server (@x402/hono with @x402/svm's server scheme)
 * settles a payer's transaction through this gateway's fee payer into the merchant's wallet.
 * The same strict check (inspect.ts), simulation and exactly-once row as a session's x402 URL
 * (settle.ts); the settlement is recorded as a new session of the merchant, as on EVM.
 */

const UINT = /^\d{1,20}$/;

/** A Solana facilitator request read: the payload, the requirements rebuilt from this gateway's config, the offer. */
export interface SvmFacilitatorPayment {
  payload: SvmPaymentPayload;
  requirements: SvmRequirements;
  offer: SvmOffer;
}

/** Whether a facilitator request is for a Solana network (`solana:<genesis>`): the SVM path answers it. */
export function isSvmFacilitatorRequest(body: FacilitatorRequest): boolean {
  const network = (body?.paymentRequirements as { network?: unknown } | null | undefined)?.network;
  return typeof network === 'string' && network.startsWith('solana:');
}

/**
 * Reads a Solana facilitator request. The requirements are rebuilt from this gateway's chain
 * config (the mint's program and decimals are ours), keeping what the merchant chooses: the
 * amount, the wallet and the timeout (at most {@link SVM_MAX_TIMEOUT_SECONDS}).
 * @returns the payment, or a refusal for requirements this gateway does not offer.
 * @throws {InvalidRequestError} for a body that cannot be read.
 */
export function readSvmFacilitatorRequest(
  body: FacilitatorRequest,
  params: { livemode: boolean; chain: ChainConfig; feePayer: string | undefined },
): SvmFacilitatorPayment | { refusal: Refusal } {
  const payload = readSvmPayment(body.paymentPayload);
  const raw = body.paymentRequirements as Record<string, unknown>;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw badRequest('paymentRequirements must be an object');
  const amount = raw.amount;
  // A u64 of base units: TransferChecked's amount.
  if (typeof amount !== 'string' || !UINT.test(amount) || BigInt(amount) === 0n || BigInt(amount) > 0xffff_ffff_ffff_ffffn)
    throw badRequest('paymentRequirements.amount must be a positive integer of base units as text');
  for (const field of ['network', 'asset', 'payTo'] as const)
    if (typeof raw[field] !== 'string') throw badRequest(`paymentRequirements.${field} must be a string`);
  const refuse = (reason: string, message: string) => ({ refusal: { reason, message } });
  if (raw.scheme !== 'exact') return refuse(SVM_REASONS.scheme, `scheme ${String(raw.scheme)} is not offered; only exact`);
  if (!params.livemode)
    return refuse(SVM_REASONS.network, 'x402 on solana settles for live keys only (the sandbox has no Solana mint a standard client can read)');
  if (raw.network !== SOLANA_MAINNET) return refuse(SVM_REASONS.network, `network ${String(raw.network)} is not offered; solana is ${SOLANA_MAINNET}`);
  if (!params.feePayer) return refuse(SVM_REASONS.network, 'this gateway has no solana fee payer (SVC_SOLANA_RELAYER_KEY)');
  const offer = svmOffer({ chain: 'solana', livemode: true, tokenAddresses: [raw.asset as string] }, params.chain);
  if (!offer) return refuse(SVM_REASONS.mint, `asset ${String(raw.asset)} is not a mint this gateway settles on solana`);
  const outside = amountOutsideLimits(BigInt(amount), offer.token.decimals);
  if (outside) return refuse(SVM_REASONS.amount, outside);
  const extra = raw.extra as { feePayer?: unknown } | undefined;
  if (extra?.feePayer !== undefined && extra.feePayer !== params.feePayer)
    return refuse(SVM_REASONS.feePayerMismatch, `extra.feePayer must be this gateway's fee payer ${params.feePayer} (see /supported)`);
  const timeout = typeof raw.maxTimeoutSeconds === 'number' && raw.maxTimeoutSeconds > 0 ? raw.maxTimeoutSeconds : SVM_MAX_TIMEOUT_SECONDS;
  const requirements = svmRequirements(offer, { payTo: raw.payTo as string, amount: BigInt(amount), secondsLeft: timeout, feePayer: params.feePayer });
  return { payload, requirements, offer };
}

/** Refuses a payTo that is not one of the merchant's verified solana wallets (base58 is compared exactly). */
async function checkSvmPayTo(sql: Sql, params: { merchantId: string; payTo: string }): Promise<Refusal | undefined> {
  const wallets = await listWallets(sql, { merchantId: params.merchantId, chain: 'solana' });
  if (wallets.some((wallet) => wallet.verified && wallet.address === params.payTo)) return undefined;
  return { reason: SVM_REASONS.recipient, message: `payTo ${params.payTo} is not a verified wallet of this merchant on solana` };
}

interface Merchant {
  merchantId: string;
  livemode: boolean;
}

/** `POST /x402/verify` for Solana: the strict check and the simulation; nothing is written or sent. */
export async function verifySvmFacilitator(
  ctx: Pick<SvmSettleContext, 'feePayer'> | undefined,
  store: Store,
  params: { merchant: Merchant; body: FacilitatorRequest; chain: ChainConfig },
): Promise<{ isValid: boolean; invalidReason?: string; invalidMessage?: string; payer?: string }> {
  const read = readSvmFacilitatorRequest(params.body, { livemode: params.merchant.livemode, chain: params.chain, feePayer: ctx?.feePayer.address });
  const invalid = (refusal: Refusal) => ({ isValid: false, invalidReason: refusal.reason, invalidMessage: refusal.message });
  if ('refusal' in read) return invalid(read.refusal);
  const payTo = await checkSvmPayTo(store, { merchantId: params.merchant.merchantId, payTo: read.requirements.payTo });
  if (payTo) return invalid(payTo);
  const checked = await verifySvmPayment(ctx!, { ...read, simulate: true });
  return 'refusal' in checked ? invalid(checked.refusal) : { isValid: true, payer: checked.payer };
}

/**
 * `POST /x402/settle` for Solana: settles exactly once per transaction (settle.ts) into a new
 * session of the merchant that `createSession` makes in the row's transaction.
 */
export async function settleSvmFacilitator(
  ctx: SvmSettleContext | undefined,
  params: {
    merchant: Merchant;
    body: FacilitatorRequest;
    chain: ChainConfig;
    createSession: (sql: Sql, terms: FacilitatorSessionTerms) => Promise<string>;
  },
): Promise<SettleResponse & { errorMessage?: string; sessionId?: string }> {
  const { merchant } = params;
  const read = readSvmFacilitatorRequest(params.body, { livemode: merchant.livemode, chain: params.chain, feePayer: ctx?.feePayer.address });
  const network = String((params.body.paymentRequirements as { network?: unknown }).network);
  const failed = (refusal: Refusal) => ({ success: false, errorReason: refusal.reason, errorMessage: refusal.message, transaction: '', network });
  if ('refusal' in read) return failed(read.refusal);
  const store = ctx!.store;
  const payTo = await checkSvmPayTo(store, { merchantId: merchant.merchantId, payTo: read.requirements.payTo });
  if (payTo) return failed(payTo);
  if (read.payload.paymentId)
    await holdPaymentId(store, { merchantId: merchant.merchantId, paymentId: read.payload.paymentId, payloadHash: svmPayloadHash(read.payload) });
  const outcome = await settleSvmOnce(ctx!, {
    ...read,
    target: { merchantId: merchant.merchantId, livemode: merchant.livemode, source: 'facilitator' },
    prepare: (sql, payer) => params.createSession(sql, { offer: read.offer, requirements: read.requirements, payer }),
  });
  if (!outcome.ok) return failed(outcome.refusal);
  const { settlement } = outcome;
  return { success: true, transaction: settlement.txHash!, network: read.requirements.network, payer: settlement.payer, sessionId: settlement.sessionId };
}

/** `/x402/supported`'s Solana kind: listed only with a fee payer, which resource servers put in `extra.feePayer`. */
export function svmSupportedKind(params: { livemode: boolean; feePayer: string | undefined }) {
  if (!params.livemode || !params.feePayer) return undefined;
  return { x402Version: 2, scheme: 'exact' as const, network: SOLANA_MAINNET, extra: { feePayer: params.feePayer } };
}
