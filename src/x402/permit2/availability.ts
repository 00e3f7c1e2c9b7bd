import type { ChainConfig } from '../../internal/chains.ts';
import type { ChainName } from '../../internal/config.ts';
import type { Logger } from '../../internal/logger.ts';
import type { Relayer } from '../relayer.ts';
import { PERMIT2_ADDRESS, X402_EXACT_PERMIT2_PROXY } from './contracts.ts';

/**
 * Looks up, for each chain with a relayer not yet known to have them, whether Permit2 and x402's
 * proxy have code there, and adds the chains that do to `ready`. Run at start and by the gas
 * watch: a chain where an operator deploys them later (docs/agents.md, "Permit2") starts offering
 * the route without a restart. A failed lookup leaves the chain out until the next pass.
 */
export async function probePermit2(relayers: Partial<Record<ChainName, Relayer>>, ready: Set<ChainName>, logger: Logger): Promise<void> {
  for (const [chain, relayer] of Object.entries(relayers) as [ChainName, Relayer][]) {
    if (ready.has(chain)) continue;
    try {
      if (await relayer.permit2.deployed()) ready.add(chain);
      else
        logger.warn({
          msg: 'x402 Permit2 route off: Permit2 or the x402 proxy is not deployed',
          chain,
          permit2: PERMIT2_ADDRESS,
          proxy: X402_EXACT_PERMIT2_PROXY,
        });
    } catch (error) {
      logger.warn({ msg: 'x402 Permit2 deployment lookup failed', chain, err: error });
    }
  }
}

/**
 * Why a live session whose x402 offer is the Permit2 route cannot be paid here (the contracts are
 * not known to be on its chain), or undefined. Sandbox sessions need no contracts (the sandbox's
 * simulated transfer settles them), and EIP-3009 offers need none either.
 */
export function permit2Unavailable(
  ready: ReadonlySet<ChainName>,
  session: { livemode: boolean; chain: ChainName; tokenAddresses: readonly string[] },
  chain: ChainConfig,
): string | undefined {
  if (!session.livemode || chain.kind !== 'evm' || ready.has(chain.name)) return undefined;
  const tokens = chain.tokens.filter((token) => session.tokenAddresses.includes(token.address));
  if (tokens.length === 0 || tokens.some((token) => token.eip3009)) return undefined;
  return `x402's Permit2 route is not available on ${chain.name}: Permit2 (${PERMIT2_ADDRESS}) or x402's exact Permit2 proxy (${X402_EXACT_PERMIT2_PROXY}) has no code there (docs/agents.md)`;
}
