import { SESSION_COLUMNS } from './session.ts';
import { LINK_VISIT_WITHOUT_PAYMENT } from './linkVisits.ts';
import { XID_COLUMN } from '../store/index.ts';

/**
 * The SQL on `payment_sessions` (pg-boss `plans.ts` style): each function returns the text of
 * one statement with `$n` parameters, documented in order; callers run it with `sql.query`.
 * The table is always aliased `s`, so {@link SESSION_COLUMNS} and `sessionColumns()` fit.
 */

/**
 * Inserts a session in status `created` with its unique due amount and returns it; no row when
 * no due amount is left. $1 id, $2 merchant, $3 livemode, $4 chain, $5 currency, $6 decimals,
 * $7 amount, $8 the due-offset bound (exclusive), $9 fee, $10 token addresses, $11 pay-to,
 * $12 reference, $13 required confirmations, $14 metadata, $15 webhook URL, $16 success URL,
 * $17 payment link, $18 lifetime in seconds, $19 monitoring window in seconds, $20 description,
 * $21 line items (JSON), $22 cancel URL, $23 payment options (JSON, or null: the session's own pair).
 *
 * The due amount is `amount + k`, k in [0, bound), that no `amount` mode session on the same (chain,
 * currency, pay_to) holds while its monitoring window is open, in either mode (an `address` mode
 * session is never matched by amount, so it holds none: selectSessionsOnWallets; see
 * dueAmounts.ts): one above the highest amount held in [amount, amount + bound), or `amount`
 * itself when none is held. Only when that would reach the bound is the range searched for its
 * first free amount. The common case is then two index lookups (`max()` read backwards from the
 * top of the range, one per mode) instead of a sort of every open session at that price: that
 * sort, done under the due-amount locks, grew with the number of open sessions and was most of
 * a busy price's creation time (docs/benchmarks.md, goal 2). Picked in this statement, under
 * the locks the caller holds, so no round trip is spent while other creations of that price wait.
 * It also returns the transaction's id ({@link XID_COLUMN}), which the store needs before COMMIT.
 */
export const insertSession = () =>
  `WITH held AS MATERIALIZED (
     SELECT greatest(
       (SELECT max(s.amount_due) FROM payment_sessions s
         WHERE s.livemode = false AND s.chain = $4 AND s.pay_to = $11 AND s.currency = $5
           AND s.amount_due >= $7::numeric AND s.amount_due < $7::numeric + $8::numeric AND s.monitor_until > now() AND s.attribution = 'amount'),
       (SELECT max(s.amount_due) FROM payment_sessions s
         WHERE s.livemode = true AND s.chain = $4 AND s.pay_to = $11 AND s.currency = $5
           AND s.amount_due >= $7::numeric AND s.amount_due < $7::numeric + $8::numeric AND s.monitor_until > now() AND s.attribution = 'amount')) AS top
   ),
   due AS MATERIALIZED (
     SELECT CASE
              WHEN held.top IS NULL THEN $7::numeric
              WHEN held.top + 1 < $7::numeric + $8::numeric THEN held.top + 1
              -- The top is taken: the first gap. In the order of the held amounts, with amount - 1
              -- put first, one above the first that the next does not follow immediately.
              ELSE (SELECT g.amount_due + 1
                      FROM (SELECT c.amount_due, lead(c.amount_due) OVER (ORDER BY c.amount_due) AS next
                              FROM (SELECT $7::numeric - 1 AS amount_due
                                    UNION ALL
                                    SELECT s.amount_due FROM payment_sessions s
                                     WHERE s.livemode IN (false, true) AND s.chain = $4 AND s.currency = $5 AND s.pay_to = $11
                                       AND s.amount_due >= $7::numeric AND s.amount_due < $7::numeric + $8::numeric AND s.monitor_until > now() AND s.attribution = 'amount') c) g
                     WHERE g.next IS NULL OR g.next > g.amount_due + 1
                     ORDER BY g.amount_due
                     LIMIT 1)
            END AS amount_due
       FROM held
   )
   INSERT INTO payment_sessions AS s (id, merchant_id, livemode, status, chain, currency, decimals, amount, amount_due, fee,
     token_addresses, pay_to, reference, required_confirmations, metadata, webhook_url, success_url, payment_link_id,
     expires_at, monitor_until, description, line_items, cancel_url, payment_options)
   SELECT $1, $2, $3, 'created', $4, $5, $6, $7::numeric, due.amount_due, $9::numeric, $10, $11, $12, $13, $14, $15, $16, $17,
     now() + make_interval(secs => $18), now() + make_interval(secs => $18 + $19), $20, $21::jsonb, $22, $23::jsonb
     FROM due WHERE due.amount_due < $7::numeric + $8::numeric
   RETURNING ${SESSION_COLUMNS}, ${XID_COLUMN}`;

/**
 * A live or sandbox creation in `amount` mode in one statement (issue 28 goal 4: each statement is
 * a round trip and a backend wake-up): the merchant's checks, the inline wallet kept (KEY SHARE),
 * the due-amount locks, the pick and the INSERT. $1..$23 as {@link insertSession} ($10 the tokens
 * without bridged ones), $24 whether the wallet was given inline for a live session (kept, and
 * checked against other merchants' verified wallets), $25 the attribution asked for or null, $26
 * the tokens with bridged ones, $27 and $28 the due-amount lock texts (dueAmounts.ts, in order).
 *
 * Answers one row: the merchant's checks (`svc_accept_bridged_tokens`, `svc_default_attribution`,
 * `svc_verified_elsewhere`), whether the wallet row was kept (`svc_wallet_kept`), and the session
 * when one was inserted (its columns null otherwise). Nothing is locked or inserted when a check
 * fails (the caller refuses), the session is in `address` mode, or the inline wallet is new (the
 * caller registers it and takes the locks after, the order every new wallet's creation takes).
 * The kept row is read before the locks (the CTE feeds them), as {@link insertSession}'s callers
 * did in two statements. The pick is `pick_due_amount` (migration 055): a VOLATILE function,
 * whose query takes its own snapshot after the locks are granted, so it sees every session
 * committed before them, which this statement's snapshot (taken before it waited) would not.
 */
export const createAmountSession = () =>
  `WITH checks AS MATERIALIZED (
     SELECT (SELECT accept_bridged_tokens FROM merchants WHERE id = $2) AS accept_bridged_tokens,
            (SELECT default_attribution FROM merchants WHERE id = $2) AS default_attribution,
            $24::boolean AND EXISTS (SELECT 1 FROM wallets WHERE chain = $4 AND address = $11 AND merchant_id <> $2 AND verified_at IS NOT NULL) AS verified_elsewhere
   ),
   kept AS MATERIALIZED (SELECT 1 FROM wallets WHERE $24::boolean AND merchant_id = $2 AND chain = $4 AND address = $11 FOR KEY SHARE),
   go AS MATERIALIZED (
     SELECT CASE WHEN coalesce(c.accept_bridged_tokens, false) THEN $26::text[] ELSE $10::text[] END AS tokens
       FROM checks c
      WHERE NOT c.verified_elsewhere
        AND (NOT $24::boolean OR EXISTS (SELECT 1 FROM kept))
        AND coalesce($25::text, CASE WHEN $4 = 'solana' THEN 'amount' ELSE c.default_attribution END, 'amount') = 'amount'
   ),
   locked AS MATERIALIZED (
     SELECT g.tokens, pg_advisory_xact_lock(hashtextextended($27, 0)) AS low, pg_advisory_xact_lock(hashtextextended($28, 0)) AS high
       FROM go g WHERE cardinality(g.tokens) > 0
   ),
   due AS MATERIALIZED (SELECT l.tokens, pick_due_amount($4, $5, $11, $7::numeric, $8::numeric) AS amount_due FROM locked l),
   created AS (
     INSERT INTO payment_sessions AS s (id, merchant_id, livemode, status, chain, currency, decimals, amount, amount_due, fee,
       token_addresses, pay_to, reference, required_confirmations, metadata, webhook_url, success_url, payment_link_id,
       expires_at, monitor_until, description, line_items, cancel_url, payment_options)
     SELECT $1, $2, $3, 'created', $4, $5, $6, $7::numeric, due.amount_due, $9::numeric, due.tokens, $11, $12, $13, $14, $15, $16, $17,
       now() + make_interval(secs => $18), now() + make_interval(secs => $18 + $19), $20, $21::jsonb, $22, $23::jsonb
       FROM due WHERE due.amount_due < $7::numeric + $8::numeric
     RETURNING ${SESSION_COLUMNS}, ${XID_COLUMN}
   )
   SELECT c.accept_bridged_tokens AS svc_accept_bridged_tokens, c.default_attribution AS svc_default_attribution,
          c.verified_elsewhere AS svc_verified_elsewhere, EXISTS (SELECT 1 FROM kept) AS svc_wallet_kept, created.*
     FROM checks c LEFT JOIN created ON true`;

/**
 * Inserts a session in `address` mode (attribution.ts) and returns it: paid at its own deposit
 * address, so its due amount is the plain amount and no due-amount lock or pick is needed.
 * $1 id, $2 merchant, $3 livemode, $4 chain, $5 currency, $6 decimals, $7 amount, $8 fee, $9 token
 * addresses, $10 pay-to, $11 deposit address, $12 required confirmations, $13 metadata, $14 webhook
 * URL, $15 success URL, $16 payment link, $17 lifetime in seconds, $18 monitoring window in seconds,
 * $19 description, $20 line items (JSON), $21 cancel URL, $22 payment options (JSON or null).
 */
export const insertAddressSession = () =>
  `INSERT INTO payment_sessions AS s (id, merchant_id, livemode, status, chain, currency, decimals, amount, amount_due, fee,
     token_addresses, pay_to, deposit_address, attribution, required_confirmations, metadata, webhook_url, success_url, payment_link_id,
     expires_at, monitor_until, description, line_items, cancel_url, payment_options)
   VALUES ($1, $2, $3, 'created', $4, $5, $6, $7::numeric, $7::numeric, $8::numeric, $9, $10, $11, 'address', $12, $13, $14, $15, $16,
     now() + make_interval(secs => $17), now() + make_interval(secs => $17 + $18), $19, $20::jsonb, $21, $22::jsonb)
   RETURNING ${SESSION_COLUMNS}, ${XID_COLUMN}`;

/** One session of a merchant and mode, optionally locked. $1 id, $2 merchant, $3 livemode. */
export const selectSession = (options: { columns?: string; forUpdate?: boolean } = {}) =>
  `SELECT ${options.columns ?? SESSION_COLUMNS} FROM payment_sessions s WHERE s.id = $1 AND s.merchant_id = $2 AND s.livemode = $3${options.forUpdate ? ' FOR UPDATE' : ''}`;

/**
 * One session by id alone, optionally locked (writers of a session's refunds lock it first, the
 * order the engine takes too). $1 id.
 */
export const selectSessionById = (options: { columns?: string; forUpdate?: boolean } = {}) =>
  `SELECT ${options.columns ?? SESSION_COLUMNS} FROM payment_sessions s WHERE s.id = $1${options.forUpdate ? ' FOR UPDATE' : ''}`;

/**
 * Sessions by id with their merchant's name (`merchantName`), brand (`brandAccentColor`,
 * `brandSupportEmail`, `brandSupportUrl`, `brandLogoSha256`: migration 040) and the database's
 * clock (`now`), for the payer's page. $1 ids.
 */
export const selectSessionsWithMerchant = (columns: string) =>
  `SELECT ${columns}, m.name AS "merchantName", m.accent_color AS "brandAccentColor", m.support_email AS "brandSupportEmail",
          m.support_url AS "brandSupportUrl", lg.sha256 AS "brandLogoSha256", now() AS now
     FROM payment_sessions s JOIN merchants m ON m.id = s.merchant_id LEFT JOIN merchant_logos lg ON lg.merchant_id = m.id
    WHERE s.id = ANY($1::text[])`;

/**
 * A page of a merchant's sessions, newest first. $1 merchant, $2 livemode, $3 statuses or null,
 * $4 chain or null, $5 currency or null, $6 created at or after or null, $7 created before or
 * null, $8 the session the page starts after or null, $9 limit, $10 link visits without
 * payment (`include`, `hide` or `only`, linkVisits.ts), $11 a payment link or null; with
 * `search`, $12 a search text: the session's id, the hash of a transfer that paid it, or a value of its metadata (any
 * key). The search is a list of candidate ids, each found by an index (the primary key,
 * transfers' unique key, hash first since migration 027, payment_sessions_metadata_present of 056:
 * only sessions with metadata, so the search says `metadata <> '{}'` too), joined to the filters: it
 * costs the matches, never a scan of the merchant's sessions (a separate statement, so the plan
 * of the plain list is not bent by it).
 */
export const listSessions = (options: { search?: boolean } = {}) =>
  `SELECT ${SESSION_COLUMNS} FROM payment_sessions s
    WHERE s.merchant_id = $1 AND s.livemode = $2
      AND ($3::text[] IS NULL OR s.status = ANY($3))
      AND ($4::text IS NULL OR s.chain = $4)
      AND ($5::text IS NULL OR s.currency = $5)
      AND ($6::timestamptz IS NULL OR s.created_at >= $6)
      AND ($7::timestamptz IS NULL OR s.created_at < $7)
      AND ($8::text IS NULL OR (s.created_at, s.id) < (SELECT created_at, id FROM payment_sessions WHERE id = $8))
      AND ($10::text = 'include' OR ${LINK_VISIT_WITHOUT_PAYMENT} = ($10::text = 'only'))
      AND ($11::text IS NULL OR s.payment_link_id = $11)${
        options.search
          ? `
      AND s.id IN (
            SELECT $12::text
            UNION SELECT t.session_id FROM transfers t WHERE t.tx_hash = $12 AND t.livemode = $2 AND t.session_id IS NOT NULL
            UNION SELECT m.id FROM payment_sessions m
              WHERE m.metadata @? ('$.* ? (@ == ' || to_jsonb($12::text)::text || ')')::jsonpath AND m.metadata <> '{}'::jsonb
                AND m.merchant_id = $1 AND m.livemode = $2)`
          : ''
      }
    ORDER BY s.created_at DESC, s.id DESC
    LIMIT $9`;

/**
 * The sessions of one (livemode, chain) that `filter` selects, locked in id order, with whether
 * each is past expiry on the database's clock (`past_expiry`) and its merchant's payment
 * tolerance (`payment_tolerance_bps`). $1 livemode, $2 chain, and what `filter` uses from $3.
 */
export const lockSessionsToEvaluate = (filter: string) =>
  `SELECT ${SESSION_COLUMNS}, s.expires_at <= now() AS past_expiry, m.payment_tolerance_bps, s.transfers_changed
     FROM payment_sessions s JOIN merchants m ON m.id = s.merchant_id
    WHERE s.livemode = $1 AND s.chain = $2 AND (${filter})
    ORDER BY s.id
    FOR UPDATE OF s`;

/**
 * Stores evaluations' outcomes, one row per session, each only if the session is still in the
 * status it was read in (the caller compares the row count). Arrays, one element per session:
 * $1 ids, $2 statuses read, $3 new statuses, $4 counted totals, $5 reported confirmed money,
 * $6 confirmations, $7 tx hashes, $8..$12 detected, confirmed, settled, expired and failed times,
 * $13 failure reasons, $14 confirmed money.
 */
export const saveEvaluations = () =>
  `UPDATE payment_sessions s
      SET status = e.status, amount_received = e.received, reported_received = e.reported, confirmations = e.confirmations,
          tx_hash = e.tx_hash, detected_at = e.detected_at, confirmed_at = e.confirmed_at, settled_at = e.settled_at,
          expired_at = e.expired_at, failed_at = e.failed_at, failure_reason = e.failure_reason, amount_confirmed = e.confirmed,
          updated_at = now()
     FROM unnest($1::text[], $2::text[], $3::text[], $4::numeric[], $5::numeric[], $6::int[], $7::text[], $8::timestamptz[],
                 $9::timestamptz[], $10::timestamptz[], $11::timestamptz[], $12::timestamptz[], $13::text[], $14::numeric[])
          AS e (id, status_read, status, received, reported, confirmations, tx_hash, detected_at, confirmed_at, settled_at,
                expired_at, failed_at, failure_reason, confirmed)
    WHERE s.id = e.id AND s.status = e.status_read`;

/** Sessions a Solana Pay reference key names, with the key (`reference`). `columns` may read `m` (merchants). $1 keys. */
export const selectSessionsByReference = (columns: string) =>
  `SELECT ${columns}, s.reference AS reference FROM payment_sessions s JOIN merchants m ON m.id = s.merchant_id WHERE s.reference = ANY($1::text[])`;

/**
 * Sessions in `amount` mode on some wallets of one (livemode, chain) whose window (created_at less
 * a clock skew .. monitor_until) overlaps a span of payment times (a session in `address` mode is
 * paid at its deposit address only: a payment of its plain amount to the shared wallet is not its). `columns` may read `m` (merchants).
 * A facilitator settlement's session whose relayer transaction is claimed for it (an `x402` claim
 * not refused, written before the broadcast: x402/bind.ts) is paid by that claim only: its due
 * amount is the authorized value exactly, not a unique one, so as an amount candidate it would
 * take a stranger's transfer of that sum, or make another session's exact due amount ambiguous.
 * $1 livemode, $2 chain, $3 wallets, $4 earliest payment, $5 latest payment, $6 clock skew in seconds.
 */
export const selectSessionsOnWallets = (columns: string) =>
  `SELECT ${columns} FROM payment_sessions s JOIN merchants m ON m.id = s.merchant_id
    WHERE s.livemode = $1 AND s.chain = $2 AND s.pay_to = ANY($3::text[]) AND s.attribution = 'amount'
      AND s.monitor_until >= $4 AND s.created_at <= $5::timestamptz + make_interval(secs => $6)
      AND NOT EXISTS (SELECT 1 FROM transaction_claims c WHERE c.session_id = s.id AND c.source = 'x402' AND c.refused_reason IS NULL)`;

/** A merchant's fees per chain and currency over its confirmed and settled sessions. $1 merchant, $2 livemode. */
export const sumFees = () =>
  `SELECT s.chain, s.currency, s.decimals, count(*) AS payments, sum(s.fee)::text AS fee FROM payment_sessions s
    WHERE s.merchant_id = $1 AND s.livemode = $2 AND s.status IN ('confirmed', 'settled')
    GROUP BY s.chain, s.currency, s.decimals ORDER BY s.chain, s.currency`;

/** How many sessions a merchant has in each state, in one mode. $1 merchant, $2 livemode. */
export const countByStatus = () =>
  `SELECT s.status, count(*)::int AS count FROM payment_sessions s WHERE s.merchant_id = $1 AND s.livemode = $2 GROUP BY s.status`;

/**
 * Confirmed money per UTC day of creation, chain and currency, over the merchant's sessions
 * created since $3 (the list index's range). $1 merchant, $2 livemode, $3 since.
 */
export const volumeByDay = () =>
  `SELECT date_trunc('day', s.created_at AT TIME ZONE 'UTC')::date::text AS day, s.chain, s.currency, s.decimals,
          count(*)::int AS payments, sum(s.amount_confirmed)::text AS amount
     FROM payment_sessions s
    WHERE s.merchant_id = $1 AND s.livemode = $2 AND s.created_at >= $3 AND s.amount_confirmed > 0
    GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3`;

/** Moves a session's expiry to `now() + $2` seconds when that is sooner (never later). $1 id, $2 seconds. */
export const expireSooner = () =>
  `UPDATE payment_sessions SET expires_at = LEAST(expires_at, now() + make_interval(secs => $2)), updated_at = now() WHERE id = $1`;

/** Gives a session a reference unless it has one; returns the one it has. $1 id, $2 new reference. */
export const assignReference = () => `UPDATE payment_sessions SET reference = coalesce(reference, $2) WHERE id = $1 RETURNING reference`;

/** The merchant of a sandbox session. $1 id. */
export const selectSandboxSessionMerchant = () => `SELECT s.merchant_id FROM payment_sessions s WHERE s.id = $1 AND s.livemode = false`;

/**
 * Records a fiat-priced session's price and quote (issue 26), in the creation's transaction right
 * after its INSERT: $1 id, $2 price (JSON), $3 quote (JSON). Returns the session.
 */
export const setPrice = () =>
  `UPDATE payment_sessions AS s SET price = $2::jsonb, price_quote = $3::jsonb WHERE s.id = $1
   RETURNING ${SESSION_COLUMNS}`;
