import { getAddress, isAddressEqual, numberToHex, verifyTypedData, type Address, type Hex } from 'viem';
import type { Eip3009Authorization, PaymentPayload, PaymentRequirements } from '../wire.ts';
import { PERMIT2_ADDRESS, PERMIT2_WITNESS_TYPES, X402_EXACT_PERMIT2_PROXY } from './contracts.ts';

/**
 * The Permit2 route's payload (`payload.permit2Authorization`, scheme_exact_evm.md), read into the
 * one shape the settlement machinery knows: its `authorization` view says who pays (`owner`), whom
 * (`witness.to`), how much (`permitted.amount`), the window (`witness.validAfter`, `deadline`) and
 * the replay key (Permit2's nonce as 32 bytes of hex); {@link Permit2Fields} keeps what only this
 * route has (token, spender, the nonce as signed).
 */
export interface Permit2Fields {
  token: string;
  spender: string;
  /** The Permit2 nonce as the payer signed it: decimal text of a uint256. */
  nonce: string;
}

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const UINT = /^\d{1,78}$/;
const MAX_UINT256 = (1n << 256n) - 1n;

/**
 * Reads `payload.permit2Authorization` when present (the Permit2 route), or returns undefined (an
 * EIP-3009 payload). `fail` throws the 400 of an unreadable header.
 */
export function readPermit2Authorization(
  payload: Record<string, unknown>,
  fail: (problem: string) => never,
): { authorization: Eip3009Authorization; permit2: Permit2Fields } | undefined {
  const raw = payload.permit2Authorization as Record<string, unknown> | undefined;
  if (raw === undefined) return undefined;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) fail('payload.permit2Authorization must be an object');
  const permitted = raw.permitted as Record<string, unknown> | undefined;
  const witness = raw.witness as Record<string, unknown> | undefined;
  if (typeof permitted !== 'object' || permitted === null || typeof witness !== 'object' || witness === null)
    fail('permit2Authorization.permitted and .witness are required');
  const addresses = { from: raw.from, spender: raw.spender, 'permitted.token': permitted.token, 'witness.to': witness.to };
  for (const [name, value] of Object.entries(addresses))
    if (typeof value !== 'string' || !ADDRESS.test(value)) fail(`permit2Authorization.${name} must be an address`);
  const numbers = { 'permitted.amount': permitted.amount, nonce: raw.nonce, deadline: raw.deadline, 'witness.validAfter': witness.validAfter };
  for (const [name, value] of Object.entries(numbers))
    if (typeof value !== 'string' || !UINT.test(value) || BigInt(value) > MAX_UINT256) fail(`permit2Authorization.${name} must be a uint256 as decimal text`);
  const nonce = BigInt(raw.nonce as string);
  return {
    authorization: {
      from: raw.from as string,
      to: witness.to as string,
      value: BigInt(permitted.amount as string).toString(),
      validAfter: BigInt(witness.validAfter as string).toString(),
      validBefore: BigInt(raw.deadline as string).toString(),
      nonce: numberToHex(nonce, { size: 32 }),
    },
    permit2: { token: permitted.token as string, spender: raw.spender as string, nonce: nonce.toString() },
  };
}

/**
 * Why a Permit2 payload cannot pay `requirements` beyond what every payload is checked for
 * (recipient, amount, window: authorization.ts): the token signed is not the asset, the spender
 * is not x402's proxy, or the EIP-712 signature over Permit2's domain on this chain is not the
 * payer's (recovered locally: an EOA payer). Undefined when it may be submitted.
 */
export async function permit2Problem(
  payload: PaymentPayload & { permit2: Permit2Fields },
  requirements: PaymentRequirements,
  chainId: number,
): Promise<{ reason: string; message: string } | undefined> {
  const { permit2, authorization: auth } = payload;
  if (!same(permit2.token, requirements.asset))
    return { reason: 'permit2_token_mismatch', message: `the permit is for token ${permit2.token}; this resource is paid in ${requirements.asset}` };
  if (!same(permit2.spender, X402_EXACT_PERMIT2_PROXY))
    return {
      reason: 'invalid_permit2_spender',
      message: `the permit's spender is ${permit2.spender}; it must be x402's exact Permit2 proxy ${X402_EXACT_PERMIT2_PROXY}`,
    };
  const signed = await verifyTypedData({
    address: getAddress(auth.from),
    domain: { name: 'Permit2', chainId, verifyingContract: PERMIT2_ADDRESS },
    types: PERMIT2_WITNESS_TYPES,
    primaryType: 'PermitWitnessTransferFrom',
    message: {
      permitted: { token: getAddress(permit2.token), amount: BigInt(auth.value) },
      spender: getAddress(permit2.spender),
      nonce: BigInt(permit2.nonce),
      deadline: BigInt(auth.validBefore),
      witness: { to: getAddress(auth.to), validAfter: BigInt(auth.validAfter) },
    },
    signature: payload.signature as Hex,
  }).catch(() => false);
  if (!signed)
    return { reason: 'invalid_permit2_signature', message: `the signature is not ${auth.from}'s over this permit (EIP-712 domain Permit2, chain ${chainId})` };
  return undefined;
}

function same(a: string, b: string): boolean {
  try {
    return isAddressEqual(a as Address, b as Address);
  } catch {
    return false;
  }
}
