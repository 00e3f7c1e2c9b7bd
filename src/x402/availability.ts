import type { ChainName } from '../internal/config.ts';
import type { Sandbox } from '../sandbox/index.ts';
import type { Relayer } from './relayer.ts';

/**
 * Why a session's x402 payments cannot be taken by this process, or undefined when they can: a
 * live session needs its chain's gas-only relayer (SVC_<CHAIN>_RELAYER_KEY with an RPC URL), a
 * sandbox one needs the sandbox running here. One rule for the `x402Url` a session advertises and
 * for the 503 its resource answers, so a session never advertises a URL that cannot be paid.
 */
export function x402Unavailable(
  ctx: { relayers: Partial<Record<ChainName, Relayer>>; sandbox?: Sandbox | undefined },
  session: { livemode: boolean; chain: ChainName },
): string | undefined {
  if (session.livemode && !ctx.relayers[session.chain])
    return `x402 is not enabled on ${session.chain}: the operator has not set SVC_${session.chain.toUpperCase()}_RELAYER_KEY`;
  if (!session.livemode && !ctx.sandbox) return 'sandbox x402 payments need the sandbox, which does not run in this process';
  return undefined;
}
