import { createSession } from '../../src/payments/sessions.ts';
import type { Session } from '../../src/payments/session.ts';
import type { ChainName } from '../../src/internal/config.ts';
import type { Currency } from '../../src/internal/chains.ts';
import type { Store } from '../../src/store/index.ts';

/** Creates a session exactly as the API does (createSession in a transaction). */
export async function makeSession(
  store: Store,
  params: {
    merchantId: string;
    chain: ChainName;
    merchantWallet: string;
    amount?: string;
    currency?: Currency;
    livemode?: boolean;
    successUrl?: string;
    expiresIn?: number;
  },
): Promise<Session> {
  return store.transaction((sql) =>
    createSession(sql, {
      merchantId: params.merchantId,
      livemode: params.livemode ?? false,
      amount: params.amount ?? '12.5',
      currency: params.currency ?? 'USDC',
      chain: params.chain,
      merchantWallet: params.merchantWallet,
      successUrl: params.successUrl,
      expiresIn: params.expiresIn,
      monitorWindowSeconds: 86400,
    }),
  );
}

/**
 * Moves a session's row as the engine would leave it (status, amounts, confirmations): for the
 * page's views that do not need a chain. The live anvil test drives the real engine instead.
 * `amountReceived` is what the engine counted; it is all confirmed, except while `created` or
 * `confirming` (a first payment waiting for its confirmations), when it is all pending.
 */
export async function setSessionState(
  store: Store,
  id: string,
  state: { status?: string; amountReceived?: bigint; confirmations?: number; txHash?: string | null; expiresInSeconds?: number },
): Promise<void> {
  await store.query(
    `UPDATE payment_sessions SET
       status = coalesce($2, status),
       amount_received = coalesce($3::numeric, amount_received),
       amount_confirmed = CASE WHEN coalesce($2, status) IN ('created', 'confirming') THEN 0 ELSE coalesce($3::numeric, amount_received) END,
       confirmations = coalesce($4, confirmations),
       tx_hash = CASE WHEN $5 THEN $6 ELSE tx_hash END,
       expires_at = CASE WHEN $7::integer IS NULL THEN expires_at ELSE now() + make_interval(secs => $7::integer) END,
       confirmed_at = CASE WHEN coalesce($2, status) IN ('confirmed', 'settled') THEN coalesce(confirmed_at, now()) ELSE confirmed_at END,
       updated_at = now()
     WHERE id = $1`,
    [
      id,
      state.status ?? null,
      state.amountReceived?.toString() ?? null,
      state.confirmations ?? null,
      state.txHash !== undefined,
      state.txHash ?? null,
      state.expiresInSeconds ?? null,
    ],
  );
}
