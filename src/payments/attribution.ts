import type { ChainName } from '../internal/config.ts';
import { badRequest } from '../internal/errors.ts';
import { getAddress } from 'viem';
import { computeDepositAddress } from '../internal/depositAddress.ts';

/**
 * How a payment is told to be a session's (issue 25, docs/deposit-addresses.md):
 * - `amount`: the payer pays the merchant's shared wallet a due amount unique among its open
 *   sessions (dueAmounts.ts); the default.
 * - `address`: the payer pays the session's own deposit address (the CREATE2 address of a
 *   forwarder whose only destination is the merchant's wallet); every transfer there is the
 *   session's, whatever its amount or sender, so the due amount is the plain amount.
 * Solana has no forwarders: its sessions always carry a Solana Pay reference, which already names
 * one session, so `address` asked for a solana session is a 400, and a merchant default of
 * `address` means references there.
 */
export const ATTRIBUTIONS = ['amount', 'address'] as const;
export type Attribution = (typeof ATTRIBUTIONS)[number];

/** Whether `value` is an attribution mode (the schemas check the wire; this checks rows and CLI input). */
export const isAttribution = (value: unknown): value is Attribution => ATTRIBUTIONS.includes(value as Attribution);

/**
 * The mode a new session gets: the one asked for, or else the merchant's default. `address` asked
 * for on solana is a 400 that says what to do; the merchant's default of `address` on solana is
 * `amount` (the session's Solana Pay reference identifies it).
 * @throws {InvalidRequestError} `address` asked for on solana.
 */
export function resolveAttribution(params: { requested?: Attribution | undefined; merchantDefault: Attribution; chain: ChainName }): Attribution {
  if (params.chain === 'solana') {
    if (params.requested === 'address') {
      throw badRequest(
        'attribution "address" is for EVM chains only; solana sessions are identified by their Solana Pay reference: omit attribution or pass "amount"',
      );
    }
    return 'amount';
  }
  return params.requested ?? params.merchantDefault;
}

/**
 * The deposit address of a session in `address` mode: pure (no I/O), the same on every EVM chain
 * for one (merchant wallet, session id), and only ever forwarding to `payTo`. Canonical (EIP-55).
 */
export function depositAddressFor(params: { payTo: string; sessionId: string }): string {
  // Canonical as every stored EVM address is: matching compares the ingester's recipients to it as text.
  return getAddress(computeDepositAddress({ merchantWallet: params.payTo as `0x${string}`, sessionId: params.sessionId }));
}
