import type { Sql } from '../store/index.ts';
import type { ChainName } from '../internal/config.ts';
import type { Currency } from '../internal/chains.ts';
import { dueOffsetBound } from './dueAmounts.ts';

/**
 * The due amount a new `amount`-mode session for (chain, currency, payTo, amount) would get if it
 * were created now: the same pick as the creation's INSERT (sessionSql.ts `insertSession`: one
 * above the highest held in [amount, amount + bound), or `amount` itself, else the first gap),
 * read without writing or locking anything. What a waiting session's x402 challenge asks for
 * each option (src/x402/choiceOffers.ts): the authorization has to name the exact value before the
 * choice makes the session, and settling refuses, before anything is sent, when the choice then
 * picks another amount (a session created in between took it; the payer fetches the 402 again).
 * Nothing is reserved (docs/checkout.md: nothing is reserved before the choice).
 * @returns base units, or undefined when every due amount of that price on the wallet is held.
 */
export async function previewDueAmount(
  sql: Sql,
  params: { chain: ChainName; currency: Currency; payTo: string; amount: bigint; decimals: number },
): Promise<bigint | undefined> {
  const { rows } = await sql.query<{ due: string | null }>(PREVIEW_DUE_AMOUNT, [
    params.chain,
    params.currency,
    params.payTo,
    params.amount.toString(),
    dueOffsetBound(params.decimals).toString(),
  ]);
  const due = rows[0]?.due;
  return due === null || due === undefined ? undefined : BigInt(due);
}

/** $1 chain, $2 currency, $3 pay-to, $4 amount, $5 the due-offset bound (exclusive); both modes hold amounts, as in the INSERT. */
const PREVIEW_DUE_AMOUNT = `
  WITH open AS MATERIALIZED (
    SELECT s.amount_due FROM payment_sessions s
     WHERE s.livemode IN (false, true) AND s.chain = $1 AND s.currency = $2 AND s.pay_to = $3 AND s.attribution = 'amount'
       AND s.amount_due >= $4::numeric AND s.amount_due < $4::numeric + $5::numeric AND s.monitor_until > now()
  ), held AS (SELECT max(amount_due) AS top FROM open),
  due AS (
    SELECT CASE
             WHEN held.top IS NULL THEN $4::numeric
             WHEN held.top + 1 < $4::numeric + $5::numeric THEN held.top + 1
             ELSE (SELECT g.amount_due + 1
                     FROM (SELECT c.amount_due, lead(c.amount_due) OVER (ORDER BY c.amount_due) AS next
                             FROM (SELECT $4::numeric - 1 AS amount_due UNION ALL SELECT amount_due FROM open) c) g
                    WHERE g.next IS NULL OR g.next > g.amount_due + 1
                    ORDER BY g.amount_due
                    LIMIT 1)
           END AS amount_due
      FROM held
  )
  SELECT CASE WHEN due.amount_due < $4::numeric + $5::numeric THEN due.amount_due::text END AS due FROM due`;
