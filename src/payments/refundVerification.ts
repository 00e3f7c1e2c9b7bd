import type { ChainName } from '../internal/config.ts';
import { loadChains } from '../internal/chains.ts';
import { base58Bytes } from '../internal/addresses.ts';
import { badRequest, conflict } from '../internal/errors.ts';
import { formatAmount } from '../internal/money.ts';
import type { Refund } from './refund.ts';
import type { Session } from './session.ts';
import type { TokenTransfer, TransactionReader, TransactionTransfers } from './transactionTransfers.ts';

/**
 * The rule a refund's transaction must meet before the refund counts as completed (the API's
 * `POST /refunds/{id}/complete` and the dashboard both go through it): the gateway never holds
 * funds, so "completed" must mean the customer was paid, on chain, by the merchant's wallet.
 *
 * Live: the transaction is mined and successful, at least as deep as the chain's confirmation
 * rule for payments (EVM: `confirmations.confirmed` blocks, e.g. 32 on polygon; solana: read at
 * commitment `confirmed`), and holds a token `Transfer` of one of the payment's tokens from the
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

/** Blocks the chain's confirmation rule asks for (EVM), or null (solana: the read's commitment). */
export function requiredConfirmations(chain: ChainName): number | null {
  const rule = loadChains()[chain].confirmations.confirmed;
  return typeof rule === 'number' ? rule : null;
}

/**
 * Checks what the chain says about `txHash` against the refund; the proof, or a refusal that
 * says exactly what is wrong: 409 while the transaction may still become acceptable (not found
 * yet, too few confirmations), 400 when it never will (failed, or pays something else).
 */
export function checkRefundTransaction(refund: Refund, payment: RefundPayment, txHash: string, tx: TransactionTransfers): RefundTransferProof {
  const where = `on ${refund.chain}`;
  if (tx.status === 'not_found') {
    throw conflict(
      `transaction ${txHash} was not found ${where}: check the hash (and that it was sent on ${refund.chain}), or wait until it is mined and try again`,
    );
  }
  if (tx.status === 'failed') throw badRequest(`transaction ${txHash} failed ${where} (reverted): it moved no tokens, so it cannot complete the refund`);
  const tokens = new Set(payment.tokenAddresses);
  const matching = tx.transfers.filter(
    (transfer) => tokens.has(transfer.token) && transfer.from === payment.payTo && transfer.to === refund.toAddress && transfer.amount === refund.amount,
  );
  if (matching.length === 0) {
    const expected = `it must transfer exactly ${money(refund.amount, refund)} (${refund.amount} base units) from the payment's receiving wallet ${payment.payTo} to ${refund.toAddress}`;
    const seen = tx.transfers.filter((transfer) => tokens.has(transfer.token));
    throw badRequest(`transaction ${txHash} does not pay this refund: ${expected}; ${describe(seen, refund)}`);
  }
  const required = requiredConfirmations(refund.chain);
  if (required !== null && (tx.confirmations ?? 0) < required) {
    throw conflict(
      `transaction ${txHash} pays this refund but has ${tx.confirmations ?? 0} of the ${required} confirmations ${refund.chain} needs; ` +
        `complete the refund again once it has ${required} (about ${Math.ceil(((required - (tx.confirmations ?? 0)) * loadChains()[refund.chain].blockTimeMs) / 1000)} s)`,
    );
  }
  return { refundId: refund.id, txHash, matchingTransfers: matching.length, verifiedOn: 'chain' };
}

function describe(transfers: TokenTransfer[], refund: Refund): string {
  if (transfers.length === 0) return `it holds no ${refund.currency} transfer of this payment's token`;
  const shown = transfers.slice(0, 3).map((transfer) => `${money(transfer.amount, refund)} from ${transfer.from} to ${transfer.to}`);
  const more = transfers.length > shown.length ? ` and ${transfers.length - shown.length} more` : '';
  return `it transfers ${shown.join('; ')}${more}`;
}

/** Reads `txHash` on the refund's chain and checks it (see {@link checkRefundTransaction}). */
export async function verifyRefundTransaction(reader: TransactionReader, refund: Refund, payment: RefundPayment, txHash: string): Promise<RefundTransferProof> {
  return checkRefundTransaction(refund, payment, txHash, await reader.transfersOf(refund.chain, txHash));
}

/** A sandbox refund's proof: the hash is well-formed; there is no chain to read. */
export function sandboxRefundProof(refund: Refund, txHash: string): RefundTransferProof {
  return { refundId: refund.id, txHash, matchingTransfers: 1, verifiedOn: 'sandbox' };
}
