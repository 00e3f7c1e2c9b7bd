import { erc20Abi, getAddress, isAddress, type Address, type PublicClient } from 'viem';
import type { Sql } from '../store/index.ts';
import type { ChainConfig } from '../internal/chains.ts';
import { InvalidRequestError, NotFoundError } from '../internal/errors.ts';
import { getSessionById } from '../payments/sessions.ts';
import { computeDepositAddress, depositSalt } from '../internal/depositAddress.ts';
import type { SweepDeposit } from './calldata.ts';
import { NATIVE_TOKEN } from './sweeps.ts';

/**
 * Which tokens a sweep flushes: `--token` values (a token address, a symbol of the chain's
 * configuration, or `native`), or by default every configured token of the chain and the native
 * coin. Any ERC-20 can be flushed (a token sent by mistake too): the forwarder moves it to its
 * destination only.
 */
export function resolveTokens(chain: Pick<ChainConfig, 'name' | 'tokens'>, requested: readonly string[]): Address[] {
  if (requested.length === 0) return [...chain.tokens.map((token) => getAddress(token.address)), NATIVE_TOKEN];
  return requested.map((text) => {
    if (text.toLowerCase() === 'native') return NATIVE_TOKEN;
    const bySymbol = chain.tokens.find((token) => token.symbol.toLowerCase() === text.toLowerCase());
    if (bySymbol) return getAddress(bySymbol.address);
    if (!isAddress(text, { strict: false }))
      throw new InvalidRequestError(`--token ${JSON.stringify(text)} is not a token address, a ${chain.name} token symbol or "native"`);
    return getAddress(text.toLowerCase());
  });
}

/**
 * The deposit address of each session (an EVM session of any mode and chain: a payment sent on
 * the wrong chain is at the same address there), paying the session's merchant wallet.
 */
export async function sessionDeposits(
  sql: Sql,
  sessionIds: readonly string[],
  tokens: readonly Address[],
): Promise<(SweepDeposit & { depositAddress: Address })[]> {
  const deposits = [];
  for (const id of sessionIds) {
    const session = await getSessionById(sql, { id, fields: ['id', 'chain', 'payTo'] });
    if (!session) throw new NotFoundError(`no session ${id}`);
    if (session.chain === 'solana') throw new InvalidRequestError(`session ${id} is on solana, which has no deposit addresses`);
    deposits.push({
      sessionId: session.id,
      destination: session.payTo,
      salt: depositSalt(session.id),
      tokens: [...tokens],
      depositAddress: computeDepositAddress({ merchantWallet: session.payTo, sessionId: session.id }),
    });
  }
  return deposits;
}

/** Each deposit with only the tokens it holds a balance of (read now); deposits holding none are left out. */
export async function withBalances<D extends SweepDeposit & { depositAddress: Address }>(
  client: PublicClient,
  deposits: readonly D[],
): Promise<(D & { balances: Record<string, bigint> })[]> {
  const result = [];
  for (const deposit of deposits) {
    const balances: Record<string, bigint> = {};
    for (const token of deposit.tokens) {
      const balance =
        token === NATIVE_TOKEN
          ? await client.getBalance({ address: deposit.depositAddress })
          : await client.readContract({ address: token as Address, abi: erc20Abi, functionName: 'balanceOf', args: [deposit.depositAddress] }).catch(() => 0n);
      if (balance > 0n) balances[token] = balance;
    }
    const held = Object.keys(balances);
    if (held.length > 0) result.push({ ...deposit, tokens: held, balances });
  }
  return result;
}
