import type { ChainName } from '../internal/config.ts';

/**
 * The text a payer's wallet signs to prove a payment (POST /checkout/{id}/transactions): the
 * gateway, the session and the transaction, one per line, so a signature made for one session,
 * one transaction or one gateway proves nothing for another (docs/security.md, "Transaction
 * proofs"). `txHash` as the gateway stores it (lowercase hex on EVM chains). Signed with EIP-191
 * `personal_sign` on EVM chains, ed25519 over its UTF-8 bytes on solana.
 */
export function proofMessage(params: { gateway: string; sessionId: string; chain: ChainName; txHash: string }): string {
  return [
    'svc gateway: I sent this payment',
    `Gateway: ${params.gateway}`,
    `Session: ${params.sessionId}`,
    `Chain: ${params.chain}`,
    `Transaction: ${params.txHash}`,
  ].join('\n');
}

/** The message with `{txHash}` standing for the transaction, for pages and agents that fill it in themselves. */
export function proofMessageTemplate(params: { gateway: string; sessionId: string; chain: ChainName }): string {
  return proofMessage({ ...params, txHash: '{txHash}' });
}
