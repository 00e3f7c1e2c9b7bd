import type { Sql } from '../store/index.ts';

/**
 * The flat 1% fee is computed per payment when the session is created (`feeFor` in
 * sessions.ts, stored in `payment_sessions.fee`). This sums it per currency and chain over a
 * merchant's confirmed and settled payments: what the merchant owes, in base units.
 */
export async function merchantFees(
  sql: Sql,
  params: { merchantId: string; livemode: boolean },
): Promise<{ chain: string; currency: string; decimals: number; payments: number; fee: bigint }[]> {
  const { rows } = await sql.query<{ chain: string; currency: string; decimals: number; payments: bigint; fee: string }>(
    `SELECT chain, currency, decimals, count(*) AS payments, sum(fee)::text AS fee FROM payment_sessions
      WHERE merchant_id = $1 AND livemode = $2 AND status IN ('confirmed', 'settled')
      GROUP BY chain, currency, decimals ORDER BY chain, currency`,
    [params.merchantId, params.livemode],
  );
  return rows.map((row) => ({ chain: row.chain, currency: row.currency, decimals: row.decimals, payments: Number(row.payments), fee: BigInt(row.fee) }));
}
