import { REASONS, type Refusal } from '../authorization.ts';
import type { Eip3009Authorization } from '../wire.ts';
import type { Permit2Calls } from './relayer.ts';
import { PERMIT2_ADDRESS, X402_EXACT_PERMIT2_PROXY } from './contracts.ts';

/**
 * The chain's part of checking a Permit2 payment, before anything is sent: the contracts are
 * there, the permit's nonce is unspent on Permit2, the payer approved Permit2 for at least the
 * amount (the one-time approval the route needs: without it the 402 says
 * `permit2_allowance_required`) and holds it. The relayer's gas estimate then simulates the call.
 */
export async function permit2OnChain(
  calls: Permit2Calls,
  params: { token: string; chain: string; authorization: Eip3009Authorization },
): Promise<Refusal | undefined> {
  const auth = params.authorization;
  if (!(await calls.deployed()))
    return {
      reason: 'permit2_proxy_not_deployed',
      message: `Permit2 (${PERMIT2_ADDRESS}) or x402's proxy (${X402_EXACT_PERMIT2_PROXY}) has no code on ${params.chain}`,
    };
  if (await calls.nonceUsed(auth.from, auth.nonce))
    return { reason: REASONS.nonceUsed, message: `Permit2 nonce ${BigInt(auth.nonce)} of ${auth.from} is already used` };
  const allowance = await calls.allowance(params.token, auth.from);
  if (allowance < BigInt(auth.value))
    return {
      reason: REASONS.permit2Allowance,
      message: `${auth.from} has approved Permit2 (${PERMIT2_ADDRESS}) for ${allowance} base units of ${params.token}; approve it once (token.approve(Permit2, amount)) and pay again`,
    };
  return undefined;
}
