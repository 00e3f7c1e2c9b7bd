/**
 * The database-pressure run (issue 30, run 6), shared by bench/chaos/dbPressure.ts (the figures)
 * and test/chaos/dbPressure.test.ts (a short run in `npm test`). A gateway process (api, ingest,
 * worker) on a cluster of the run's own serves steady sandbox payments with webhooks while the
 * cluster is made read-only, then has every connection slot taken, then has a hot table locked.
 * The audit: every answer is a 2xx, a 4xx/503 `{"error"}` (each 503 with Retry-After) within a
 * bound, never a 500 nor a hang; the daemon never exits; afterwards every session the API said it
 * created exists (and no other), is paid and settled, and every event reached the receiver.
 */
import { createStore } from '../../../src/store/index.ts';
import { makeKeyRing, newEncryptionKey, startGatewayProcess } from './apiAudit.ts';
import { lockTable, makeReadOnly, startPressureCluster, takeAllConnections, type Fault } from './dbFaults.ts';
import { answerDefects, createTraffic, startReceiver } from './paymentTraffic.ts';

export interface DbPressureOptions {
  /** Port of the run's embedded cluster. */
  pgPort: number;
  /** How long each fault is held, in milliseconds (the lock: 30 s in the full run). */
  holdMs: { readOnly: number; connections: number; lock: number };
  /** Pause between faults (and before the first), in milliseconds. */
  gapMs: number;
  /** Milliseconds between traffic rounds. */
  intervalMs: number;
  /** The gateway's SVC_API_DB_TIMEOUT_MS. */
  apiDbTimeoutMs: number;
  /** The longest an answer may take (a longer wait is a hang). */
  answerBoundMs: number;
  /** How long the pipeline gets after the last fault to settle every payment and deliver every event. */
  settleMs: number;
  log?: (line: string) => void;
}

export interface FaultFigures {
  name: string;
  detail: string;
  heldMs: number;
  requests: number;
  answered503: number;
  maxMs: number;
  /** From the fault's end to the first payment created (2xx), ms. */
  apiRecoveryMs: number | null;
  /** From the fault's end to the next webhook received, ms. */
  deliveryRecoveryMs: number | null;
}

export interface DbPressureReport {
  defects: string[];
  faults: FaultFigures[];
  requests: number;
  statuses: Record<string, number>;
  sessionsCreated: number;
  sessionsSettled: number;
  events: number;
  eventsDelivered: number;
  duplicateDeliveries: number;
  daemonExits: number;
  durationMs: number;
}

/** How often the run reads the session list itself while a fault is held. */
const PROBE_EVERY_MS = 500;
const statusCounts = (answers: Array<{ status: number }>) => {
  const counts = new Map<number, number>();
  for (const answer of answers) counts.set(answer.status, (counts.get(answer.status) ?? 0) + 1);
  return [...counts].map(([status, count]) => `${count} x ${status}`).join(', ');
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function runDbPressure(options: DbPressureOptions): Promise<DbPressureReport> {
  const log = options.log ?? (() => {});
  const started = performance.now();
  const cluster = await startPressureCluster(options.pgPort);
  const key = newEncryptionKey();
  const daemon = await startGatewayProcess({
    databaseUrl: cluster.gatewayUrl,
    encryptionKey: key.hex,
    env: { SVC_API_DB_TIMEOUT_MS: String(options.apiDbTimeoutMs) },
  });
  const store = createStore({ connectionString: cluster.auditUrl, max: 2 });
  const receiver = await startReceiver();
  const defects: string[] = [];
  const faults: FaultFigures[] = [];
  try {
    const ring = await makeKeyRing(store, key.box);
    const traffic = createTraffic({ baseUrl: daemon.url, key: ring.test, requestTimeoutMs: options.answerBoundMs * 3 });
    const endpoint = await fetch(`${daemon.url}/api/v1/webhooks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ring.test}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: receiver.url }),
    });
    if (endpoint.status !== 201) throw new Error(`registering the webhook endpoint: ${endpoint.status} ${await endpoint.text()}`);
    log(`daemon pid ${daemon.pid} at ${daemon.url}; traffic every ${options.intervalMs} ms`);
    traffic.start(options.intervalMs);
    await sleep(options.gapMs);

    const plan: Array<[number, () => Promise<Fault>]> = [
      [options.holdMs.readOnly, () => makeReadOnly(cluster.adminUrl)],
      [options.holdMs.connections, () => takeAllConnections(cluster.adminUrl)],
      [options.holdMs.lock, () => lockTable(cluster.auditUrl, 'payment_sessions')],
    ];
    for (const [holdMs, make] of plan) {
      const firstAnswer = traffic.answers.length;
      const from = Date.now();
      const fault = await make();
      traffic.setFault(fault.name);
      log(`fault: ${fault.name} (${fault.detail}) for ${holdMs} ms`);
      const t0 = performance.now();
      // Probes beside the rounds: a round can spend the whole hold in one request that waits it out
      // (the sandbox payment runs on the workers' unbounded store), so every fault also meets reads
      // the API must answer 503 within its database wait.
      const probes: Promise<unknown>[] = [];
      while (performance.now() - t0 < holdMs) {
        probes.push(traffic.probe());
        await sleep(Math.min(PROBE_EVERY_MS, Math.max(0, holdMs - (performance.now() - t0))));
      }
      traffic.setFault(undefined);
      await fault.end();
      await Promise.all(probes);
      const heldMs = Math.round(performance.now() - t0);
      const endedAt = Date.now();
      const deliveredAtEnd = [...receiver.received.values()].reduce((a, b) => a + b, 0);
      const recovery = { api: null as number | null, delivery: null as number | null };
      const deadline = Date.now() + Math.max(options.gapMs, 10_000);
      while ((recovery.api === null || recovery.delivery === null) && Date.now() < deadline) {
        const created = traffic.answers.slice(firstAnswer).find((a) => a.at >= endedAt && a.route === 'POST /payments' && a.status === 201);
        if (recovery.api === null && created) recovery.api = created.at - endedAt;
        if (recovery.delivery === null && [...receiver.received.values()].reduce((a, b) => a + b, 0) > deliveredAtEnd) recovery.delivery = Date.now() - endedAt;
        await sleep(50);
      }
      // Under the fault: every request whose wait overlapped it, sent before it began or not.
      const under = traffic.answers.filter((a) => a.sentAt < endedAt && a.at > from);
      faults.push({
        name: fault.name,
        detail: fault.detail,
        heldMs,
        requests: under.length,
        answered503: under.filter((a) => a.status === 503).length,
        maxMs: Math.round(Math.max(0, ...under.map((a) => a.ms))),
        apiRecoveryMs: recovery.api,
        deliveryRecoveryMs: recovery.delivery,
      });
      log(
        `  ${under.length} requests under it, ${faults.at(-1)!.answered503} answered 503 (${statusCounts(under)}); recovered: API ${recovery.api} ms, webhooks ${recovery.delivery} ms`,
      );
      if (recovery.api === null) defects.push(`${fault.name}: the API created no payment in 30 s after the fault ended`);
      await sleep(Math.max(0, options.gapMs - (Date.now() - endedAt)));
    }
    await traffic.stop();
    await traffic.finishPayments(options.settleMs);
    log(`traffic stopped: ${traffic.created.length} sessions created, ${traffic.paid.size} paid; waiting for the pipeline to settle`);

    // The pipeline settles every paid session and delivers every event (or the wait runs out).
    const merchant = ring.merchantId;
    const state = async () => {
      const sessions = (await store.query<{ id: string; status: string }>('SELECT id, status FROM payment_sessions WHERE merchant_id = $1', [merchant])).rows;
      const events = (
        await store.query<{ id: string; type: string; session_id: string | null }>('SELECT id, type, session_id FROM events WHERE merchant_id = $1', [merchant])
      ).rows;
      const deliveries = (
        await store.query<{ status: string; n: number }>(
          'SELECT d.status, count(*)::int AS n FROM webhook_deliveries d JOIN events e ON e.id = d.event_id WHERE e.merchant_id = $1 GROUP BY 1',
          [merchant],
        )
      ).rows;
      return { sessions, events, deliveries };
    };
    const settleDeadline = Date.now() + options.settleMs;
    let final = await state();
    while (Date.now() < settleDeadline) {
      // Every delivery row finished too: the receiver can hold a request whose success the worker
      // has not committed yet (a race the audit would otherwise count as a pending delivery).
      const done =
        final.sessions.every((s) => s.status === 'settled') &&
        final.events.every((e) => receiver.received.has(e.id)) &&
        final.deliveries.every((row) => row.status === 'succeeded');
      if (done) break;
      await sleep(500);
      final = await state();
    }

    defects.push(...answerDefects(traffic.answers, options.answerBoundMs));
    const createdIds = new Set(traffic.created);
    for (const session of final.sessions) {
      if (!createdIds.has(session.id)) defects.push(`session ${session.id} exists though no create was answered 2xx for it (half-written)`);
      else if (session.status !== 'settled') defects.push(`session ${session.id} is ${session.status}, not settled`);
    }
    const inDatabase = new Set(final.sessions.map((s) => s.id));
    for (const id of traffic.created) if (!inDatabase.has(id)) defects.push(`session ${id} was created (2xx) but is not in the database (lost)`);
    for (const id of traffic.created) if (!traffic.paid.has(id)) defects.push(`session ${id} could not be paid after the faults`);
    const eventIds = new Set(final.events.map((e) => e.id));
    for (const event of final.events) if (!receiver.received.has(event.id)) defects.push(`event ${event.id} (${event.type}) never reached the receiver`);
    for (const id of receiver.received.keys()) if (!eventIds.has(id)) defects.push(`the receiver got ${id}, which is no event of the merchant (phantom)`);
    const perSession = new Map<string, number>();
    for (const event of final.events) {
      if (!event.session_id) continue;
      const key = `${event.session_id} ${event.type}`;
      perSession.set(key, (perSession.get(key) ?? 0) + 1);
    }
    for (const [key, n] of perSession) if (n > 1) defects.push(`${key}: ${n} events for one state change (duplicated)`);
    for (const row of final.deliveries) if (row.status !== 'succeeded') defects.push(`${row.n} deliveries ${row.status}`);
    if (daemon.exits.length > 0) defects.push(`the daemon exited: ${JSON.stringify(daemon.exits)}\n${daemon.recentLogs.slice(-10).join('\n')}`);
    const health = await fetch(`${daemon.url}/api/v1/health`).then(
      (r) => r.status,
      () => 0,
    );
    if (health !== 200) defects.push(`/health answers ${health} after the run`);

    const statuses: Record<string, number> = {};
    for (const answer of traffic.answers) statuses[answer.status] = (statuses[answer.status] ?? 0) + 1;
    const duplicates = [...receiver.received.values()].reduce((sum, n) => sum + n - 1, 0);
    return {
      defects,
      faults,
      requests: traffic.answers.length,
      statuses,
      sessionsCreated: traffic.created.length,
      sessionsSettled: final.sessions.filter((s) => s.status === 'settled').length,
      events: final.events.length,
      eventsDelivered: final.events.filter((e) => receiver.received.has(e.id)).length,
      duplicateDeliveries: duplicates,
      daemonExits: daemon.exits.length,
      durationMs: Math.round(performance.now() - started),
    };
  } finally {
    await daemon.stop();
    await receiver.close();
    await store.close();
    await cluster.close();
  }
}
