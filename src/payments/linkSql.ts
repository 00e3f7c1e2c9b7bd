import { LINK_COLUMNS } from './link.ts';

/**
 * The SQL on `payment_links`, and on the sessions links make (pg-boss `plans.ts` style): each
 * function returns the text of one statement with `$n` parameters, documented in order.
 */

/**
 * A new payment link. $1 id, $2 merchant, $3 livemode, $4 chain, $5 currency, $6 decimals,
 * $7 amount, $8 fixed wallet or null, $9 metadata, $10 webhook URL, $11 success URL, $12 session lifetime,
 * $13 attribution mode or null (the merchant's default at each visit), $14 description, $15 line
 * items (JSON), $16 cancel URL, $17 payment options (JSON, or null: only $4/$5), $18 listed by x402 discovery.
 */
export const insertLink = () =>
  `INSERT INTO payment_links AS l (id, merchant_id, livemode, chain, currency, decimals, amount, merchant_wallet, metadata, webhook_url, success_url, expires_in,
     attribution, description, line_items, cancel_url, payment_options, x402_discoverable)
   VALUES ($1, $2, $3, $4, $5, $6, $7::numeric, $8, $9, $10, $11, $12, $13, $14, $15::jsonb, $16, $17::jsonb, $18) RETURNING ${LINK_COLUMNS}`;

/**
 * Makes a just-inserted link fiat-priced (issue 26), in the creation's transaction: $1 id, $2 price
 * (JSON). Its token amount is then decided at each visit, so the placeholder amount goes.
 */
export const setLinkPrice = () => `UPDATE payment_links AS l SET price = $2::jsonb, amount = NULL WHERE l.id = $1 RETURNING ${LINK_COLUMNS}`;

/** One link of a merchant and mode. $1 id, $2 merchant, $3 livemode. */
export const selectLink = () => `SELECT ${LINK_COLUMNS} FROM payment_links l WHERE l.id = $1 AND l.merchant_id = $2 AND l.livemode = $3`;

/** One link by id alone (a visit's read, unlocked). $1 id. */
export const selectLinkById = () => `SELECT ${LINK_COLUMNS} FROM payment_links l WHERE l.id = $1`;

/** One link by id alone, locked (a visit: the link id is public). $1 id. */
export const lockLinkById = () => `SELECT ${LINK_COLUMNS} FROM payment_links l WHERE l.id = $1 FOR UPDATE`;

/**
 * A page of a merchant's links, newest first. $1 merchant, $2 livemode, $3 active or null,
 * $4 the link the page starts after or null, $5 limit.
 */
export const listLinks = () =>
  `SELECT ${LINK_COLUMNS} FROM payment_links l
    WHERE l.merchant_id = $1 AND l.livemode = $2 AND ($3::boolean IS NULL OR l.active = $3)
      AND ($4::text IS NULL OR (l.created_at, l.id) < (SELECT created_at, id FROM payment_links WHERE id = $4))
    ORDER BY l.created_at DESC, l.id DESC LIMIT $5`;

/** Activates or deactivates a link of a merchant and mode, and returns it. $1 id, $2 merchant, $3 livemode, $4 active. */
export const setLinkActive = () =>
  `UPDATE payment_links l SET active = $4, updated_at = now() WHERE l.id = $1 AND l.merchant_id = $2 AND l.livemode = $3 RETURNING ${LINK_COLUMNS}`;

/**
 * Opts a link of a merchant and mode in to x402 discovery or out of it, and returns it; a change
 * moves `updated_at` (discovery's `lastUpdated`). $1 id, $2 merchant, $3 livemode, $4 discoverable.
 */
export const setLinkDiscoverable = () =>
  `UPDATE payment_links l SET x402_discoverable = $4, updated_at = CASE WHEN l.x402_discoverable = $4 THEN l.updated_at ELSE now() END
    WHERE l.id = $1 AND l.merchant_id = $2 AND l.livemode = $3 RETURNING ${LINK_COLUMNS}`;

/**
 * A page of the links x402 discovery lists (docs/agents.md "Discovery"): opted in, active, live,
 * with at least one of its pairs (its `payment_options`, else its own chain and currency) on one of
 * the offers $1 (text[] of `chain:currency:<merchant accepts bridged tokens>`) x402 takes here and
 * paid to a wallet (the link's own, else that chain's default) that is $2 when $2 is not null
 * (case-insensitively: EVM addresses), newest first. Each row: the link, `payTo` (its first
 * pair's wallet), `wallets` (the merchant's default wallet per chain, JSON), the merchant's name
 * and `acceptBridged` (which tokens its sessions take), and `total` (every matching row). $3
 * limit, $4 offset.
 */
export const listDiscoverableLinks = () =>
  `SELECT ${LINK_COLUMNS}, d.pay_to AS "payTo", d.wallets AS "wallets", m.name AS "merchantName",
          coalesce(m.accept_bridged_tokens, false) AS "acceptBridged", count(*) OVER ()::int AS total
     FROM payment_links l
     JOIN merchants m ON m.id = l.merchant_id
     CROSS JOIN LATERAL (SELECT coalesce(jsonb_object_agg(w.chain, w.address), '{}'::jsonb) AS wallets
                           FROM wallets w WHERE w.merchant_id = l.merchant_id AND w.is_default) dw
     CROSS JOIN LATERAL (SELECT coalesce(l.merchant_wallet, dw.wallets ->> l.chain) AS pay_to, dw.wallets) d
    WHERE l.x402_discoverable AND l.active AND l.livemode
      -- A fiat-priced link (amount null: converted at each visit) is not listed yet: its token amount is not known here.
      AND l.amount IS NOT NULL
      AND EXISTS (
        SELECT 1 FROM jsonb_array_elements(coalesce(l.payment_options, jsonb_build_array(jsonb_build_object('chain', l.chain, 'currency', l.currency)))) o
         WHERE ((o ->> 'chain') || ':' || (o ->> 'currency') || ':' || coalesce(m.accept_bridged_tokens, false)::text) = ANY($1::text[])
           AND coalesce(l.merchant_wallet, d.wallets ->> (o ->> 'chain')) IS NOT NULL
           AND ($2::text IS NULL OR lower(coalesce(l.merchant_wallet, d.wallets ->> (o ->> 'chain'))) = lower($2)))
    ORDER BY l.created_at DESC, l.id DESC LIMIT $3 OFFSET $4`;

/** Counts one more session made by a link. $1 id. */
export const countLinkSession = () => `UPDATE payment_links SET sessions_created = sessions_created + 1 WHERE id = $1`;

/**
 * How many of a link's sessions are open and not paid in full (`n`), and the seconds until the
 * first of them expires (`seconds`). $1 link. A session that saw
 * less than its due amount still counts: otherwise a visitor could free the slot by paying dust
 * (on Solana a reference-carrying transfer of one base unit matches its session).
 */
export const countOpenLinkSessions = () =>
  `SELECT count(*)::int AS n, ceil(extract(epoch FROM min(expires_at) - now()))::int AS seconds FROM payment_sessions
    WHERE payment_link_id = $1 AND expires_at > now() AND status NOT IN ('confirmed', 'settled') AND amount_received < amount_due`;

/**
 * How many due amounts link sessions not paid in full hold (dust does not free one) in [amount, amount + bound) on one (chain,
 * currency, wallet), in either mode, counting at most $6 (`n`), and the seconds until the first
 * of them ends (`seconds`). $1 chain, $2 currency, $3 pay-to, $4 amount, $5 bound, $6 cap.
 */
export const countLinkReservations = () =>
  `SELECT count(*)::int AS n, ceil(extract(epoch FROM min(monitor_until) - now()))::int AS seconds FROM (
     SELECT monitor_until FROM payment_sessions
      WHERE livemode IN (false, true) AND chain = $1 AND currency = $2 AND pay_to = $3
        AND amount_due >= $4::numeric AND amount_due < $4::numeric + $5::numeric AND monitor_until > now()
        AND payment_link_id IS NOT NULL AND status NOT IN ('confirmed', 'settled') AND amount_received < amount_due
        AND attribution = 'amount'
      ORDER BY monitor_until LIMIT $6) held`;
