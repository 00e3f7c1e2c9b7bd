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
