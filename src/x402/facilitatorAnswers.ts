import type { Sql, Store } from '../store/index.ts';
import type { ChainConfig } from '../internal/chains.ts';
import type { ChainName, Config } from '../internal/config.ts';
import type { Sandbox } from '../sandbox/index.ts';
import { REASONS, type Refusal } from './authorization.ts';
import { checkPayTo, createFacilitatorSession, readFacilitatorRequest, type FacilitatorRequest, type FacilitatorSessionTerms } from './facilitator.ts';
import { holdPaymentId } from './paymentId.ts';
import type { Relayer } from './relayer.ts';
import { settleOnce, verifyPayment, type SettleContext } from './settle.ts';
import { signatureHash } from './settlements.ts';
import { settleResponse } from './sessionAnswer.ts';
import { isSvmFacilitatorRequest } from './svm/facilitator.ts';
import type { SvmX402 } from './svm/index.ts';
import type { SettleResponse } from './wire.ts';

/**
 * The facilitator's `POST /x402/verify` and `/x402/settle` (spec §7) for a merchant's own x402
 * resource server: an EVM payment is read and checked by facilitator.ts and settled by
 * settle.ts into a new session of the merchant; a Solana one is svm/'s.
 */

/** What the facilitator endpoints need of the stage. */
export interface FacilitatorDeps {
  store: Store;
  ctx: SettleContext;
  chains: Record<ChainName, ChainConfig>;
  relayers: Partial<Record<ChainName, Relayer>>;
  sandbox?: Sandbox | undefined;
  /** Read at each settlement (the new session's monitor window and fee). */
  config: Pick<Config, 'monitorWindowSeconds' | 'feeBps'>;
  liveChains: ChainName[];
  svm: Pick<SvmX402, 'verify' | 'settle'>;
}

type Merchant = { merchantId: string; livemode: boolean };

/** Records a facilitator settlement as a new session of the merchant (any chain), in the row's transaction. */
function facilitatorSession(deps: FacilitatorDeps, merchant: Merchant) {
  return (sql: Sql, payment: FacilitatorSessionTerms): Promise<string> =>
    createFacilitatorSession(sql, {
      merchantId: merchant.merchantId,
      livemode: merchant.livemode,
      payment,
      chains: deps.chains,
      monitorWindowSeconds: deps.config.monitorWindowSeconds,
      feeBps: deps.config.feeBps,
      liveChains: deps.liveChains,
    });
}

/** `POST /x402/verify`: whether the payment would settle now, without sending anything. */
export async function verifyFacilitator(
  deps: FacilitatorDeps,
  merchant: Merchant,
  body: FacilitatorRequest,
): Promise<{ isValid: boolean; invalidReason?: string; invalidMessage?: string; payer?: string }> {
  if (isSvmFacilitatorRequest(body)) return deps.svm.verify(merchant, body);
  const read = readFacilitatorRequest(body, { livemode: merchant.livemode, chains: deps.chains });
  const payer = read.payload.authorization.from;
  if ('refusal' in read) return { isValid: false, invalidReason: read.refusal.reason, invalidMessage: read.refusal.message, payer };
  const refusal =
    (await checkPayTo(deps.store, { merchantId: merchant.merchantId, offer: read.offer, payTo: read.requirements.payTo })) ??
    (await verifyPayment(deps.ctx, { ...read, livemode: merchant.livemode }));
  return refusal ? { isValid: false, invalidReason: refusal.reason, invalidMessage: refusal.message, payer } : { isValid: true, payer };
}

/** `POST /x402/settle`: settles into a new session of the merchant. */
export async function settleFacilitator(
  deps: FacilitatorDeps,
  merchant: Merchant,
  body: FacilitatorRequest,
): Promise<SettleResponse & { errorMessage?: string; sessionId?: string }> {
  if (isSvmFacilitatorRequest(body)) return deps.svm.settle(merchant, body, facilitatorSession(deps, merchant));
  const read = readFacilitatorRequest(body, { livemode: merchant.livemode, chains: deps.chains });
  const payer = read.payload.authorization.from;
  const network = 'requirements' in read ? read.requirements.network : String((body.paymentRequirements as { network?: unknown })?.network ?? '');
  const failed = (refusal: Refusal) => ({ success: false, errorReason: refusal.reason, errorMessage: refusal.message, transaction: '', network, payer });
  if ('refusal' in read) return failed(read.refusal);
  if (merchant.livemode && !deps.relayers[read.offer.chain])
    return failed({ reason: REASONS.network, message: `this gateway has no relayer on ${read.offer.chain}` });
  if (!merchant.livemode && !deps.sandbox) return failed({ reason: REASONS.network, message: 'the sandbox does not run in this process' });
  const payTo = await checkPayTo(deps.store, { merchantId: merchant.merchantId, offer: read.offer, payTo: read.requirements.payTo });
  if (payTo) return failed(payTo);
  if (read.payload.paymentId)
    await holdPaymentId(deps.store, { merchantId: merchant.merchantId, paymentId: read.payload.paymentId, payloadHash: signatureHash(read.payload) });
  const outcome = await settleOnce(deps.ctx, {
    ...read,
    target: { merchantId: merchant.merchantId, livemode: merchant.livemode, source: 'facilitator' },
    prepare: (sql) => facilitatorSession(deps, merchant)(sql, { ...read, payer }),
  });
  if (!outcome.ok) return failed(outcome.refusal);
  return { ...settleResponse(outcome.settlement, read.offer.network, 2), sessionId: outcome.settlement.sessionId };
}
