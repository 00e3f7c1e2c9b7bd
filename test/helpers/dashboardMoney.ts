import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { requestRefund } from '../../src/payments/refunds.ts';
import type { Refund } from '../../src/payments/refund.ts';
import type { Session } from '../../src/payments/session.ts';
import type { Store } from '../../src/store/index.ts';
import { makeSession, setSessionState } from './checkoutSessions.ts';
import { newEvmWallet } from './engine.ts';

/** A fresh customer address (a real key's address, so the live refund checks accept it). */
export const newCustomerAddress = (): string => privateKeyToAccount(generatePrivateKey()).address;

/**
 * A polygon USDC payment of `amount` paid in full and confirmed (the row as the engine leaves it),
 * and a refund of `refund` requested for it through the domain, as the API requests one.
 */
export async function confirmedPaymentWithRefund(
  store: Store,
  params: { merchantId: string; livemode: boolean; wallet?: string; amount?: string; refund?: string; address?: string },
): Promise<{ session: Session; refund: Refund }> {
  const session = await makeSession(store, {
    merchantId: params.merchantId,
    chain: 'polygon',
    merchantWallet: params.wallet ?? newEvmWallet(),
    amount: params.amount ?? '12.5',
    livemode: params.livemode,
  });
  await setSessionState(store, session.id, { status: 'confirmed', amountReceived: session.amountDue });
  const refund = await store.transaction((sql) =>
    requestRefund(sql, {
      merchantId: params.merchantId,
      livemode: params.livemode,
      paymentId: session.id,
      amount: params.refund ?? '5',
      address: params.address ?? newCustomerAddress(),
      reason: 'damaged in transit',
    }),
  );
  return { session, refund };
}
