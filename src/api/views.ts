import type { SessionRow } from '../engine/sessions.ts';
import { formatAmount } from '../internal/money.ts';
import { loadChains } from '../internal/chains.ts';

/**
 * Interface B reports the session state `created` as `pending` (spec §3: "a newly created
 * payment in Interface B reports pending"); every other state reads the same in both.
 */
export function statusB(status: string): string {
  return status === 'created' ? 'pending' : status;
}

/** `${publicUrl}/checkout/<id>`: the hosted page (built by the checkout stage). */
export function checkoutUrl(publicUrl: string, sessionId: string): string {
  return `${publicUrl}/checkout/${sessionId}`;
}

function tokensOf(row: SessionRow): { symbol: string; address: string }[] {
  const chain = loadChains()[row.chain];
  return row.token_addresses.map((address) => ({ symbol: chain.tokens.find((token) => token.address === address)?.symbol ?? row.currency, address }));
}

function sessionFields(row: SessionRow, publicUrl: string) {
  const amount = formatAmount(row.amount, row.decimals);
  return {
    id: row.id,
    amount,
    displayAmount: amount,
    currency: row.currency,
    chain: row.chain,
    checkoutUrl: checkoutUrl(publicUrl, row.id),
    paymentAddress: row.pay_to,
    merchantWallet: row.pay_to,
    amountDue: formatAmount(row.amount_due, row.decimals),
    amountDueBaseUnits: row.amount_due.toString(),
    // Confirmed money only; the rest of what the engine counted is pending (docs/security.md).
    amountReceived: formatAmount(row.amount_confirmed, row.decimals),
    amountPending: formatAmount(row.amount_received > row.amount_confirmed ? row.amount_received - row.amount_confirmed : 0n, row.decimals),
    decimals: row.decimals,
    tokens: tokensOf(row),
    fee: formatAmount(row.fee, row.decimals),
    feeBaseUnits: row.fee.toString(),
    // Solana Pay only: on EVM chains the sandbox keeps a reference on the session to route its
    // simulated payments exactly, which payers must not be asked for.
    reference: row.chain === 'solana' ? row.reference : null,
    txHash: row.tx_hash,
    confirmations: row.confirmations,
    requiredConfirmations: row.required_confirmations,
    metadata: row.metadata,
    webhookUrl: row.webhook_url,
    successUrl: row.success_url,
    paymentLinkId: row.payment_link_id,
    livemode: row.livemode,
    createdAt: row.created_at.toISOString(),
    expiresAt: row.expires_at.toISOString(),
    confirmedAt: row.confirmed_at?.toISOString() ?? null,
  };
}

/** A session as Interface A shows it (spec §2.1 plus the payer's fields). */
export function sessionViewA(row: SessionRow, publicUrl: string) {
  return { ...sessionFields(row, publicUrl), status: row.status };
}

/** The same session as Interface B shows it (spec §2.2 plus the same extra fields). */
export function paymentViewB(row: SessionRow, publicUrl: string) {
  return { ...sessionFields(row, publicUrl), status: statusB(row.status) };
}
