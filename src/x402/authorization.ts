import { getAddress, isAddressEqual, verifyTypedData, type Address } from 'viem';
import { permit2Problem, type Permit2Fields } from './permit2/payload.ts';
import type { PaymentPayload, PaymentRequirements } from './wire.ts';

/**
 * Why a payment is refused, as x402's reference facilitator names it (`invalidReason` /
 * `errorReason`: @x402/evm's `invalid_exact_evm_*` codes), with a sentence for people.
 */
export interface Refusal {
  reason: string;
  message: string;
}

export const REASONS = {
  scheme: 'unsupported_scheme',
  network: 'invalid_exact_evm_network_mismatch',
  asset: 'invalid_exact_evm_asset_mismatch',
  recipient: 'invalid_exact_evm_recipient_mismatch',
  value: 'invalid_exact_evm_authorization_value',
  expired: 'invalid_exact_evm_payload_authorization_valid_before',
  notYetValid: 'invalid_exact_evm_payload_authorization_valid_after',
  signature: 'invalid_exact_evm_signature',
  nonceUsed: 'invalid_exact_evm_nonce_already_used',
  balance: 'invalid_exact_evm_insufficient_balance',
  notPayable: 'session_not_payable',
  busy: 'session_already_being_paid',
  transaction: 'transaction_failed',
  payerReverts: 'payer_recent_reverts',
  method: 'invalid_exact_evm_asset_transfer_method',
  permit2Allowance: 'permit2_allowance_required',
} as const;

/** EIP-3009's typed data (FiatToken v2), what @x402/evm signs. */
export const TRANSFER_WITH_AUTHORIZATION_TYPES = {
  TransferWithAuthorization: [
    { name: 'from', type: 'address' },
    { name: 'to', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'validAfter', type: 'uint256' },
    { name: 'validBefore', type: 'uint256' },
    { name: 'nonce', type: 'bytes32' },
  ],
} as const;

/**
 * A validity window must still have this many seconds left: the relayer's transaction has to be
 * mined before `validBefore` (the reference facilitator uses 6 s; a few blocks on every chain).
 */
export const MIN_SECONDS_LEFT = 6;

function refuse(reason: string, message: string): Refusal {
  return { reason, message };
}

/**
 * Checks a signed EIP-3009 authorization against the requirements it must meet, without the
 * chain: scheme, network, asset, recipient, the exact amount, the validity window and the
 * EIP-712 signature (recovered locally with viem; an EOA payer). The chain's part (nonce unused,
 * balance) is the relayer's ({@link ./relayer.ts}).
 * @returns the first refusal, or undefined when it may be submitted.
 */
export async function checkAuthorization(
  payload: PaymentPayload,
  requirements: PaymentRequirements,
  params: { chainId: number; nowSeconds: number },
): Promise<Refusal | undefined> {
  const auth = payload.authorization;
  if (payload.scheme !== 'exact') return refuse(REASONS.scheme, `scheme ${payload.scheme} is not offered; pay with the exact scheme`);
  if (payload.network !== requirements.network)
    return refuse(REASONS.network, `the payment is for network ${payload.network}; this resource is paid on ${requirements.network}`);
  if (payload.accepted?.asset !== undefined && !sameAddress(payload.accepted.asset, requirements.asset))
    return refuse(REASONS.asset, `the payment is for token ${payload.accepted.asset}; this resource is paid in ${requirements.asset}`);
  if (!sameAddress(auth.to, requirements.payTo))
    return refuse(REASONS.recipient, `the authorization pays ${auth.to}; this resource is paid to ${requirements.payTo}`);
  if (BigInt(auth.value) !== BigInt(requirements.amount))
    return refuse(REASONS.value, `the authorization is for ${auth.value} base units; this resource asks for exactly ${requirements.amount}`);
  if (BigInt(auth.validBefore) < BigInt(params.nowSeconds + MIN_SECONDS_LEFT))
    return refuse(REASONS.expired, `the authorization expired (validBefore ${auth.validBefore}); sign a new one`);
  if (BigInt(auth.validAfter) > BigInt(params.nowSeconds)) return refuse(REASONS.notYetValid, `the authorization is not valid before ${auth.validAfter}`);
  const method = requirements.extra.assetTransferMethod ?? 'eip3009';
  if ((payload.permit2 ? 'permit2' : 'eip3009') !== method)
    return refuse(
      REASONS.method,
      `this resource is paid with ${method === 'permit2' ? 'a Permit2 permit' : 'an EIP-3009 authorization'}; sign the method its requirements name`,
    );
  if (payload.permit2) return permit2Problem(payload as PaymentPayload & { permit2: Permit2Fields }, requirements, params.chainId);
  const signed = await verifyTypedData({
    address: getAddress(auth.from),
    domain: { name: requirements.extra.name, version: requirements.extra.version, chainId: params.chainId, verifyingContract: getAddress(requirements.asset) },
    types: TRANSFER_WITH_AUTHORIZATION_TYPES,
    primaryType: 'TransferWithAuthorization',
    message: {
      from: getAddress(auth.from),
      to: getAddress(auth.to),
      value: BigInt(auth.value),
      validAfter: BigInt(auth.validAfter),
      validBefore: BigInt(auth.validBefore),
      nonce: auth.nonce as `0x${string}`,
    },
    signature: payload.signature,
  }).catch(() => false);
  if (!signed)
    return refuse(
      REASONS.signature,
      `the signature is not ${auth.from}'s over this authorization (EIP-712 domain ${requirements.extra.name} / ${requirements.extra.version}, chain ${params.chainId})`,
    );
  return undefined;
}

function sameAddress(a: string, b: string): boolean {
  try {
    return isAddressEqual(a as Address, b as Address);
  } catch {
    return false;
  }
}
