import { encodeFunctionData, getAddress, isAddressEqual, parseEventLogs, type Address, type Hex, type Log } from 'viem';
import { depositFactoryArtifact } from '../internal/depositArtifacts.ts';
import { DEPOSIT_FACTORY_ADDRESS, depositAddressForSalt } from '../internal/depositAddress.ts';
import type { ItemOutcome, SweepItem } from './sweeps.ts';

/** The deposit factory's ABI (contracts/DepositFactory.sol), from the committed artifact. */
export const DEPOSIT_FACTORY_ABI = depositFactoryArtifact.abi;

/** One deposit address to sweep: the forwarder of (destination, salt), and the tokens to flush (NATIVE_TOKEN: the native coin). */
export interface SweepDeposit {
  /** The session the address belongs to (null for an address swept by its salt alone). */
  sessionId: string | null;
  /** The merchant's wallet: the forwarder's only destination. */
  destination: string;
  salt: Hex;
  tokens: string[];
}

/** The items a sweep records: one per (deposit, token), positioned as in the call. */
export function sweepItems(deposits: readonly SweepDeposit[]): Omit<SweepItem, 'outcome' | 'amount'>[] {
  return deposits.flatMap((deposit, position) => {
    const depositAddress = depositAddressForSalt({ merchantWallet: deposit.destination, salt: deposit.salt });
    return deposit.tokens.map((token) => ({
      position,
      token: getAddress(token),
      sessionId: deposit.sessionId,
      depositAddress,
      destination: getAddress(deposit.destination.toLowerCase()),
      salt: deposit.salt,
    }));
  });
}

/** The factory call: `deployAndFlush` for one deposit, `sweep` for several (one failing does not revert the others). */
export function sweepCalldata(deposits: readonly SweepDeposit[]): Hex {
  const args = deposits.map((deposit) => ({
    destination: getAddress(deposit.destination.toLowerCase()),
    salt: deposit.salt,
    tokens: deposit.tokens.map((token) => getAddress(token)),
  }));
  if (args.length === 1) {
    const [only] = args as [(typeof args)[number]];
    return encodeFunctionData({ abi: DEPOSIT_FACTORY_ABI, functionName: 'deployAndFlush', args: [only.destination, only.salt, only.tokens] });
  }
  return encodeFunctionData({ abi: DEPOSIT_FACTORY_ABI, functionName: 'sweep', args: [args] });
}

/**
 * Each item's outcome from the factory's events in a mined sweep: `flushed` with the amounts of
 * its Flushed events (summed: a hostile token re-entering the factory can flush the same pair
 * twice; only the forwarder's own transfers count), `failed` on FlushFailed or DeployFailed, or
 * when no event names it. Events of the factory only: nothing else can emit them.
 */
export function itemOutcomes(
  items: readonly Pick<SweepItem, 'position' | 'token' | 'depositAddress'>[],
  logs: readonly Log[],
): { position: number; token: string; outcome: Exclude<ItemOutcome, 'pending'>; amount: bigint | null }[] {
  const events = parseEventLogs({ abi: DEPOSIT_FACTORY_ABI, logs: logs.filter((log) => isAddressEqual(log.address, DEPOSIT_FACTORY_ADDRESS)) as Log[] });
  const flushed = new Map<string, bigint>();
  const key = (forwarder: string, token: string) => `${forwarder.toLowerCase()}:${token.toLowerCase()}`;
  for (const event of events) {
    const args = event.args as { forwarder: Address; token?: Address; amount?: bigint };
    // FlushFailed and DeployFailed need no bookkeeping: an item without a Flushed event failed.
    if (event.eventName === 'Flushed') flushed.set(key(args.forwarder, args.token!), (flushed.get(key(args.forwarder, args.token!)) ?? 0n) + args.amount!);
  }
  return items.map((item) => {
    const amount = flushed.get(key(item.depositAddress, item.token));
    if (amount !== undefined) return { position: item.position, token: item.token, outcome: 'flushed', amount };
    return { position: item.position, token: item.token, outcome: 'failed', amount: null };
  });
}
