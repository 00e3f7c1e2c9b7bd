import type { Sql } from '../store/index.ts';
import { LINK_VISIT_WITHOUT_PAYMENT } from './linkVisits.ts';

/**
 * The headline figures of a period (the dashboard's Home, issue 27): for the merchant's sessions
 * of one mode created in [since, now), per currency, the confirmed money received, the count of
 * sessions in each state and the fee (the flat fee of the confirmed and settled ones, as
 * `GET /fees` totals it). Money is bigint base units; one currency has one `decimals` per chain,
 * summed per currency (see {@link periodFigures}).
 */
export interface PeriodFigures {
  currency: string;
  decimals: number;
  /** Confirmed money of the period's sessions (the wire's `amountReceived`), base units. */
  volume: bigint;
  /** The flat fee of the period's confirmed and settled sessions, base units. */
  fee: bigint;
  /** Sessions by their stored status. */
  counts: Map<string, number>;
}

/**
 * $1 merchant, $2 livemode, $3 since (null: all time). The list index (merchant, livemode,
 * created_at) serves it. Link visits without payment are not payments (linkVisits.ts): left out,
 * as the payments list leaves them out.
 */
const periodSql = () =>
  `SELECT s.currency, s.decimals, s.status, count(*)::int AS count, sum(s.amount_confirmed)::text AS volume,
          coalesce(sum(s.fee) FILTER (WHERE s.status IN ('confirmed', 'settled')), 0)::text AS fee
     FROM payment_sessions s
    WHERE s.merchant_id = $1 AND s.livemode = $2 AND ($3::timestamptz IS NULL OR s.created_at >= $3)
      AND NOT ${LINK_VISIT_WITHOUT_PAYMENT}
    GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`;

/**
 * The period's figures per currency, currencies in alphabetical order; none when nothing was
 * created. A currency with different decimals on different chains (USDT: 18 on bsc, 6 elsewhere)
 * is summed at its largest decimals, scaling the others up exactly (bigint, no rounding).
 */
export async function periodFigures(sql: Sql, params: { merchantId: string; livemode: boolean; since: Date | null }): Promise<PeriodFigures[]> {
  const { rows } = await sql.query<{ currency: string; decimals: number; status: string; count: number; volume: string; fee: string }>(periodSql(), [
    params.merchantId,
    params.livemode,
    params.since,
  ]);
  const decimalsOf = new Map<string, number>();
  for (const row of rows) decimalsOf.set(row.currency, Math.max(decimalsOf.get(row.currency) ?? 0, row.decimals));
  const byCurrency = new Map<string, PeriodFigures>();
  for (const row of rows) {
    const decimals = decimalsOf.get(row.currency)!;
    const scale = 10n ** BigInt(decimals - row.decimals);
    const figures = byCurrency.get(row.currency) ?? { currency: row.currency, decimals, volume: 0n, fee: 0n, counts: new Map<string, number>() };
    figures.volume += BigInt(row.volume ?? '0') * scale;
    figures.fee += BigInt(row.fee) * scale;
    figures.counts.set(row.status, (figures.counts.get(row.status) ?? 0) + row.count);
    byCurrency.set(row.currency, figures);
  }
  return [...byCurrency.values()];
}
