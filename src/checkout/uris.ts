import type { ChainName } from '../internal/config.ts';
import { fakeAddress } from '../internal/sandboxIds.ts';

/**
 * Wallet deep links. Each carries everything a wallet needs to pay without typing: the token,
 * the chain, the recipient and the exact amount, so a scanned QR code cannot send the wrong
 * token or the wrong amount.
 */

/**
 * An EIP-681 ERC-20 transfer request: `ethereum:<token>@<chainId>/transfer?address=<to>&uint256=<units>`.
 * The amount is in base units (EIP-681 `uint256`), so no wallet has to guess the decimals.
 */
export function eip681Uri(params: { token: string; chainId: number; recipient: string; baseUnits: bigint }): string {
  return `ethereum:${params.token}@${params.chainId}/transfer?address=${params.recipient}&uint256=${params.baseUnits.toString()}`;
}

/**
 * A Solana Pay transfer request: `solana:<recipient>?amount=<decimal>&spl-token=<mint>&reference=<key>&label=…&message=…`.
 * Solana Pay writes the amount in token units (decimal text, never an exponent); the
 * `reference` key lets the gateway find the transaction exactly.
 */
export function solanaPayUri(params: { recipient: string; mint: string; amount: string; reference: string | null; label: string; message: string }): string {
  const query = new URLSearchParams();
  query.set('amount', params.amount);
  query.set('spl-token', params.mint);
  if (params.reference) query.set('reference', params.reference);
  query.set('label', params.label);
  query.set('message', params.message);
  // URLSearchParams writes spaces as "+"; Solana Pay wallets decode with decodeURIComponent, which needs %20.
  return `solana:${params.recipient}?${query.toString().replace(/\+/g, '%20')}`;
}

/**
 * The public test network of each EVM chain (EIP-155 ids): what sandbox payment instructions
 * name instead of the mainnet. A sandbox session's QR code or wallet link therefore asks a
 * wallet for a test-network transfer (worthless tokens, if the contract even exists there); a
 * wallet on mainnet refuses or asks to switch, so a tester who scans a "Test mode" code with a
 * real wallet cannot send real money.
 */
export const SANDBOX_EVM_CHAIN_IDS = {
  polygon: 80002, // Polygon Amoy
  base: 84532, // Base Sepolia
  bsc: 97, // BNB Smart Chain testnet
  arbitrum: 421614, // Arbitrum Sepolia
  optimism: 11155420, // OP Sepolia
} as const satisfies Record<Exclude<ChainName, 'solana'>, number>;

/** The Solana cluster sandbox instructions name (Solana Pay URIs carry no cluster; see {@link sandboxSolanaMint}). */
export const SANDBOX_SOLANA_CLUSTER = 'devnet';

/**
 * The chain id (EVM) or cluster (solana) payment instructions name: the chain's own for live
 * sessions, its public test network for sandbox ones.
 */
export function instructionChainId(chain: { name: ChainName; chainId: number | string }, livemode: boolean): number | string {
  if (livemode) return chain.chainId;
  return chain.name === 'solana' ? SANDBOX_SOLANA_CLUSTER : SANDBOX_EVM_CHAIN_IDS[chain.name];
}

/**
 * The `spl-token` of a sandbox Solana Pay URI: a fake mint derived from the real one (a sandbox
 * value, random-looking base58 of the right length), which exists on no cluster. Solana Pay URIs
 * name no cluster, so with the real mint a mainnet wallet would send real tokens; with this one no
 * wallet can build the transfer at all.
 */
export function sandboxSolanaMint(mint: string): string {
  return fakeAddress('solana', `mint:${mint}`);
}

/**
 * The token a sandbox session's instructions name, in place of the real one: a fake mint on
 * solana (see {@link sandboxSolanaMint}), a fake contract on EVM chains (no code anywhere, so even
 * a transfer sent on mainnet moves nothing). An agent or tester building the transfer from the
 * JSON fields, not the URI, is as safe as one scanning the QR code.
 */
export function sandboxToken(chain: { name: ChainName; kind: 'evm' | 'solana' }, token: string): string {
  return chain.kind === 'solana' ? sandboxSolanaMint(token) : fakeAddress(chain.name, `token:${token.toLowerCase()}`);
}

/**
 * The wallet URI of one token of a session: EIP-681 on EVM chains, Solana Pay on solana, each
 * made unpayable with real money when the session is a sandbox one (test-network chain id and a
 * fake contract; a fake mint).
 */
export function sessionPaymentUri(params: {
  chain: { name: ChainName; kind: 'evm' | 'solana'; chainId: number | string };
  livemode: boolean;
  token: string;
  recipient: string;
  baseUnits: bigint;
  /** The same amount as decimal text (Solana Pay writes token units). */
  amount: string;
  reference: string | null;
  label: string;
  message: string;
}): string {
  if (params.chain.kind === 'solana') {
    return solanaPayUri({
      recipient: params.recipient,
      mint: params.livemode ? params.token : sandboxToken(params.chain, params.token),
      amount: params.amount,
      reference: params.reference,
      label: params.label,
      message: params.message,
    });
  }
  return eip681Uri({
    token: params.livemode ? params.token : sandboxToken(params.chain, params.token),
    chainId: instructionChainId(params.chain, params.livemode) as number,
    recipient: params.recipient,
    baseUnits: params.baseUnits,
  });
}
