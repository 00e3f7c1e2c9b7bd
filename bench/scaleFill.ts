import type { Store } from '../src/store/index.ts';

/**
 * Fills the database with a year of history for bench/scale.ts, by `generate_series` in chunks:
 * `scale` × 1M sessions (a fifth the measured merchant's, the rest spread over other merchants;
 * 75 % settled, 24 % expired, 1 % failed), 10M transfers (each settled session's payment, the
 * rest unmatched transfers to watched wallets, all already looked at by matching), 3M events
 * (their payload cloned from a real one), one delivery per event and 5M webhook attempts over the
 * last 90 days. Amounts are consistent (received = due = the transfer's amount), so the engine
 * finds nothing to change in the history, as in a healthy database.
 *
 * Secondary indexes and unique constraints of the filled tables are dropped first and rebuilt after (CREATE INDEX sorts
 * once; inserting into five B-trees row by row would take most of the fill), and the fill runs
 * with `session_replication_role = replica` (no foreign-key triggers: the rows are consistent by
 * construction). Then VACUUM ANALYZE, as autovacuum would leave a table that size.
 */
export async function fillHistory(
  store: Store,
  params: { scale: number; merchantId: string; wallet: string; log(line: string): void },
): Promise<Record<string, number>> {
  const n = (base: number) => Math.max(1, Math.round(base * params.scale));
  const sessions = n(1_000_000);
  const transfers = n(10_000_000);
  const events = Math.min(n(3_000_000), sessions * 3);
  const attempts = n(5_000_000);
  const merchants = Math.max(10, n(1_000));
  const CHUNK = 250_000;
  const tables = ['payment_sessions', 'transfers', 'events', 'webhook_deliveries', 'webhook_attempts'];

  const { rows: indexes } = await store.query<{ indexname: string; indexdef: string }>(
    `SELECT i.indexname, i.indexdef FROM pg_indexes i
      WHERE i.schemaname = 'public' AND i.tablename = ANY($1)
        AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = (quote_ident(i.indexname))::regclass)`,
    [tables],
  );
  for (const index of indexes) await store.query(`DROP INDEX ${index.indexname}`);
  // Unique constraints too (not primary keys, which foreign keys need): a sort builds them faster
  // than 10M random insertions into a B-tree of text keys.
  const { rows: uniques } = await store.query<{ table: string; name: string; definition: string }>(
    `SELECT conrelid::regclass::text AS table, conname AS name, pg_get_constraintdef(oid) AS definition
       FROM pg_constraint WHERE contype = 'u' AND conrelid::regclass::text = ANY($1)`,
    [tables],
  );
  for (const unique of uniques) await store.query(`ALTER TABLE ${unique.table} DROP CONSTRAINT ${unique.name}`);

  // Which merchant owns session g: every fifth the measured one, else one of the others.
  const owner = (g: string) => `CASE WHEN ${g} % 5 = 0 THEN $1 ELSE 'm_scale_' || (${g} % ${merchants}) END`;
  const payTo = (g: string, wallet = '$2') => `CASE WHEN ${g} % 5 = 0 THEN ${wallet} ELSE '0x' || lpad(to_hex(${g} % ${merchants}), 40, '0') END`;
  /** Sessions are spread over the last 365 days, g = 1 the oldest. */
  const createdAt = (g: string) => `now() - make_interval(secs => (${sessions} - ${g} + 1) * ${(365 * 86_400) / sessions})`;
  const settled = (g: string) => `(${g} % 100 < 75)`;

  const chunked = async (label: string, total: number, sql: string, values: unknown[] = []) => {
    const started = performance.now();
    for (let from = 1; from <= total; from += CHUNK) {
      const to = Math.min(total, from + CHUNK - 1);
      await store.transaction(async (tx) => {
        await tx.query('SET LOCAL session_replication_role = replica');
        await tx.query(sql.replaceAll('$FROM', String(from)).replaceAll('$TO', String(to)), values);
      });
    }
    params.log(`${label}: ${total.toLocaleString('en')} rows in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  };

  // Other merchants: copies of the measured one (every column but id and name, whatever later migrations added).
  const { rows: merchantColumns } = await store.query<{ column_name: string }>(
    `SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = 'merchants' AND column_name NOT IN ('id', 'name')`,
  );
  const copied = merchantColumns.map((column) => `"${column.column_name}"`).join(', ');
  await chunked(
    'merchants',
    merchants,
    `INSERT INTO merchants (id, name, ${copied})
     SELECT 'm_scale_' || g, 'Scale merchant ' || g, ${merchantColumns.map((column) => `m."${column.column_name}"`).join(', ')}
       FROM generate_series($FROM - 1, $TO - 1) g, (SELECT * FROM merchants WHERE id = $1) m`,
    [params.merchantId],
  );
  await chunked(
    'payment_sessions',
    sessions,
    `INSERT INTO payment_sessions (id, merchant_id, livemode, status, chain, currency, decimals, amount, amount_due, amount_received,
        amount_confirmed, reported_received, fee, token_addresses, pay_to, confirmations, required_confirmations,
        created_at, updated_at, expires_at, monitor_until, detected_at, confirmed_at, settled_at, expired_at, failed_at, failure_reason)
     SELECT 'ps_scale_' || g, ${owner('g')}, true, s.status, 'polygon', 'USDC', 6, a.amount, a.amount,
        CASE WHEN s.status = 'settled' THEN a.amount ELSE 0 END, CASE WHEN s.status = 'settled' THEN a.amount ELSE 0 END,
        CASE WHEN s.status = 'settled' THEN a.amount ELSE 0 END, a.amount / 100, ARRAY['0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359'],
        ${payTo('g')}, CASE WHEN s.status = 'settled' THEN 20 ELSE 0 END, 20,
        c.at, c.at, c.at + interval '1 hour', c.at + interval '1 day',
        CASE WHEN s.status = 'settled' THEN c.at + interval '2 minutes' END, CASE WHEN s.status = 'settled' THEN c.at + interval '3 minutes' END,
        CASE WHEN s.status = 'settled' THEN c.at + interval '10 minutes' END, CASE WHEN s.status = 'expired' THEN c.at + interval '1 day' END,
        CASE WHEN s.status = 'failed' THEN c.at + interval '1 day' END, CASE WHEN s.status = 'failed' THEN 'underpaid' END
       FROM generate_series($FROM, $TO) g,
            LATERAL (SELECT CASE WHEN ${settled('g')} THEN 'settled' WHEN g % 100 < 99 THEN 'expired' ELSE 'failed' END AS status) s,
            LATERAL (SELECT (10000000 + g % 100000)::numeric AS amount) a,
            LATERAL (SELECT ${createdAt('g')} AS at) c`,
    [params.merchantId, params.wallet],
  );
  // Transfer g <= sessions pays session g when it settled; every other one is unmatched, decided:
  // replica mode keeps migration 026's trigger from queueing them for matching.
  await chunked(
    'transfers',
    transfers,
    `INSERT INTO transfers (livemode, chain, tx_hash, log_index, block_number, block_hash, block_time, token_address, from_address, to_address,
        amount, session_id, match_method, matched_at, observed_at)
     SELECT true, 'polygon', '0x' || md5('t' || g) || md5('u' || g), 0, g, '0x' || md5('b' || g) || md5('c' || g), c.at,
        '0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359', '0x' || lpad(to_hex(g % 65536), 40, 'f'), ${payTo('g', '$1')},
        CASE WHEN p.pays THEN (10000000 + g % 100000)::numeric ELSE (1000000 + g % 999)::numeric END,
        CASE WHEN p.pays THEN 'ps_scale_' || g END, CASE WHEN p.pays THEN 'amount' END, CASE WHEN p.pays THEN c.at END, c.at
       FROM generate_series($FROM, $TO) g,
            LATERAL (SELECT g <= ${sessions} AND ${settled('g')} AS pays) p,
            LATERAL (SELECT CASE WHEN g <= ${sessions} THEN ${createdAt('g')} + interval '2 minutes'
                                 ELSE now() - make_interval(secs => (${transfers} - g + 1) * ${(365 * 86_400) / transfers}) END AS at) c`,
    [params.wallet],
  );
  // Event g reports session (g - 1) / 3 + 1; its payload is a real event's with the ids replaced.
  await chunked(
    'events',
    events,
    `INSERT INTO events (id, merchant_id, livemode, type, session_id, payload, created_at, dispatched_at)
     SELECT 'evt_scale_' || g, ${owner('s')}, true, t.type, 'ps_scale_' || s,
        jsonb_set(jsonb_set(jsonb_set(e.payload, '{id}', to_jsonb('evt_scale_' || g)), '{type}', to_jsonb(t.type)), '{data,id}', to_jsonb('ps_scale_' || s)),
        ${createdAt('s')} + make_interval(mins => g % 3), ${createdAt('s')} + make_interval(mins => g % 3)
       FROM generate_series($FROM, $TO) g,
            LATERAL (SELECT (g - 1) / 3 + 1 AS s) k,
            LATERAL (SELECT (ARRAY['payment.confirming', 'payment.confirmed', 'payment.settled'])[g % 3 + 1] AS type) t,
            (SELECT payload FROM events WHERE merchant_id = $1 ORDER BY seq LIMIT 1) e`,
    [params.merchantId],
  );
  await chunked(
    'webhook_deliveries',
    events,
    `INSERT INTO webhook_deliveries (id, event_id, merchant_id, livemode, url, origin, target, status, attempt_count, last_attempt_at,
        last_response_status, created_at, completed_at)
     SELECT 'whd_scale_' || g, 'evt_scale_' || g, ${owner('((g - 1) / 3 + 1)')}, true, 'https://hooks.example/svc', 'dispatch', 'session', 'succeeded',
        1, now(), 200, now(), now()
       FROM generate_series($FROM, $TO) g`,
    [params.merchantId],
  );
  // Attempt g: delivery (g - 1) % deliveries + 1, started within the last 90 days (two thirds older than 30).
  await chunked(
    'webhook_attempts',
    attempts,
    `INSERT INTO webhook_attempts (id, delivery_id, event_id, attempt_number, url, request_headers, request_body, response_status,
        response_body_excerpt, duration_ms, succeeded, started_at)
     SELECT 'wha_scale_' || g, 'whd_scale_' || d, 'evt_scale_' || d, (g - 1) / ${events} + 1, 'https://hooks.example/svc',
        '{"content-type": "application/json"}', repeat('x', 400), 200, 'ok', 20, true,
        now() - make_interval(secs => ((g::bigint * 7919) % ${90 * 86_400})::int)
       FROM generate_series($FROM, $TO) g, LATERAL (SELECT (g - 1) % ${events} + 1 AS d) k`,
  );

  const started = performance.now();
  await store.transaction(async (sql) => {
    await sql.query(`SET LOCAL maintenance_work_mem = '256MB'`);
    for (const index of indexes) await sql.query(index.indexdef);
    for (const unique of uniques) await sql.query(`ALTER TABLE ${unique.table} ADD CONSTRAINT ${unique.name} ${unique.definition}`);
  });
  params.log(`${indexes.length} secondary indexes and ${uniques.length} unique constraints rebuilt in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  const vacuumed = performance.now();
  for (const table of [...tables, 'merchants']) await store.query(`VACUUM ANALYZE ${table}`);
  params.log(`VACUUM ANALYZE in ${((performance.now() - vacuumed) / 1000).toFixed(0)} s`);
  return { merchants, payment_sessions: sessions, transfers, events, webhook_deliveries: events, webhook_attempts: attempts };
}
