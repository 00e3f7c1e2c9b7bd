import type { ChainName } from '../internal/config.ts';
import { loadChains } from '../internal/chains.ts';
import { base58Bytes } from '../internal/addresses.ts';
import { badRequest, conflict } from '../internal/errors.ts';
import { formatAmount } from '../internal/money.ts';
import type { Refund } from './refund.ts';
import type { Session } from './session.ts';
import type { Sql } from '../store/index.ts';
import { isConfirmed, readChainHead, type ChainHead } from '../ingest/confirmations.ts';
import type { LookedUpTransaction, TokenMovement, TransactionLookups } from '../ingest/lookup.ts';

/**
 * The rule a refund's transaction must meet before the refund counts as completed (the API's
 * `POST /refunds/{id}/complete` and the dashboard both go through it): the gateway never holds
 * funds, so "completed" must mean the customer was paid, on chain, by the merchant's wallet.
 *
 * Live: the transaction is mined and successful, confirmed by the same rule as a payment's
 * transfer (ingest/confirmations.ts `isConfirmed`, against the chain head the ingester stored:
 * EVM `confirmations.confirmed` blocks deep, e.g. 32 on polygon, or finalized; solana finalized),
 * since a refund reorged away after `refund.completed` would be money the customer never got; it
 * holds a token `Transfer` of one of the payment's tokens from the
 * payment's receiving wallet (`payTo`) to the refund's address of exactly the refund's amount.
 * One such transfer completes one refund: a transaction completes as many refunds (of that
 * address and amount) as it holds matching transfers, so a hash cannot be replayed for a second
 * refund. Sandbox: there is no chain to read (sandbox wallets and tokens are fake), so a
 * well-formed hash is accepted unverified, still at most once.
 */

/** A refund transaction checked against the rule above; only {@link verifyRefundTransaction} and {@link sandboxRefundProof} make one. */
export interface RefundTransferProof {
  readonly refundId: string;
  /** Canonical hash (lower-case hex on EVM). */
  readonly txHash: string;
  /** How many transfers in the transaction match the refund (address, amount, token, sender). */
  readonly matchingTransfers: number;
  readonly verifiedOn: 'chain' | 'sandbox';
}

/** A transaction hash in canonical form: 0x + 64 lower-case hex on EVM, a base58 64-byte signature on solana; else a 400. */
export function canonicalTxHash(chain: ChainName, text: string): string {
  const trimmed = text.trim();
  if (chain !== 'solana') {
    if (/^0x[0-9a-fA-F]{64}$/.test(trimmed)) return trimmed.toLowerCase();
    throw badRequest('txHash must be 0x followed by 64 hex digits');
  }
  try {
    if (/^[1-9A-HJ-NP-Za-km-z]{64,90}$/.test(trimmed) && base58Bytes(trimmed).length === 64) return trimmed;
  } catch {
    // not base58: refused below
  }
  throw badRequest('txHash must be a base58 transaction signature (64 bytes)');
}

/** What verification reads of the refund's payment. */
export type RefundPayment = Pick<Session, 'payTo' | 'tokenAddresses'>;

const money = (units: bigint, refund: Pick<Refund, 'decimals' | 'currency'>) => `${formatAmount(units, refund.decimals)} ${refund.currency}`;

/** Blocks the chain's confirmation rule asks for (EVM), or null (solana: finalized only). */
export function requiredConfirmations(chain: ChainName): number | null {
  const rule = loadChains()[chain].confirmations.confirmed;
  return typeof rule === 'number' ? rule : null;
}

/**
 * Checks what the chain says about `txHash` against the refund; the proof, or a refusal that
 * says exactly what is wrong: 409 while the transaction may still become acceptable (not found
 * yet, not confirmed yet), 400 when it never will (failed, or pays something else).
 */
export function checkRefundTransaction(refund: Refund, payment: RefundPayment, txHash: string, tx: LookedUpTransaction, head: ChainHead): RefundTransferProof {
  const where = `on ${refund.chain}`;
  if (!tx.found) {
    throw conflict(
      `transaction ${txHash} was not found ${where}: check the hash (and that it was sent on ${refund.chain}), or wait until it is mined and try again`,
    );
  }
  if (tx.failed) throw badRequest(`transaction ${txHash} failed ${where} (reverted): it moved no tokens, so it cannot complete the refund`);
  const tokens = new Set(payment.tokenAddresses);
  const ofPayment = tx.movements.filter((movement) => tokens.has(movement.token));
  const matching = ofPayment.filter((movement) => movement.from === payment.payTo && movement.to === refund.toAddress && movement.amount === refund.amount);
  if (matching.length === 0) {
    const expected = `it must transfer exactly ${money(refund.amount, refund)} (${refund.amount} base units) from the payment's receiving wallet ${payment.payTo} to ${refund.toAddress}`;
    throw badRequest(`transaction ${txHash} does not pay this refund: ${expected}; ${describe(ofPayment, refund)}`);
  }
  const chain = loadChains()[refund.chain];
  const required = requiredConfirmations(refund.chain);
  if (!isConfirmed(chain, head, tx.blockNumber, required ?? 0)) {
    const depth = head.headBlock !== null && head.headBlock >= tx.blockNumber ? Number(head.headBlock - tx.blockNumber + 1n) : 0;
    const rule = required === null ? 'it is finalized' : `it is ${required} blocks deep (now ${depth})`;
    throw conflict(`transaction ${txHash} pays this refund but is not confirmed yet: complete the refund again once ${rule}`);
  }
  return { refundId: refund.id, txHash, matchingTransfers: matching.length, verifiedOn: 'chain' };
}

function describe(transfers: TokenMovement[], refund: Refund): string {
  if (transfers.length === 0) return `it holds no ${refund.currency} transfer of this payment's token`;
  const shown = transfers.slice(0, 3).map((transfer) => `${money(transfer.amount, refund)} from ${transfer.from ?? 'an unknown sender'} to ${transfer.to}`);
  const more = transfers.length > shown.length ? ` and ${transfers.length - shown.length} more` : '';
  return `it transfers ${shown.join('; ')}${more}`;
}

/** Looks `txHash` up on the refund's chain (the api role's RPC lookups) and checks it against the stored live head (see {@link checkRefundTransaction}). */
export async function verifyRefundTransaction(
  sql: Sql,
  lookups: TransactionLookups,
  refund: Refund,
  payment: RefundPayment,
  txHash: string,
): Promise<RefundTransferProof> {
  const tx = await lookups.lookup(refund.chain, txHash);
  return checkRefundTransaction(refund, payment, txHash, tx, await readChainHead(sql, { livemode: true, chain: refund.chain }));
}

/** A sandbox refund's proof: the hash is well-formed; there is no chain to read. */
export function sandboxRefundProof(refund: Refund, txHash: string): RefundTransferProof {
  return { refundId: refund.id, txHash, matchingTransfers: 1, verifiedOn: 'sandbox' };
}
