/**
 * Latency from a block that pays a session becoming visible to the merchant's receiver holding
 * the verified `payment.confirming` (issue 16 goal 5), with a WebSocket `newHeads` subscription
 * and with HTTP polling only.
 *
 *   npx tsx bench/latency.ts [--payments 40] [--mode both|ws|poll] [--gap-ms 400]
 *
 * anvil (chain id 137, the real polygon token addresses, automine off) serves HTTP and WebSocket
 * on one port. The daemon's stages run as the daemon wires them: the real EVM ingester
 * (createIngest, with SVC_POLYGON_WS_URL set in the WebSocket mode and unset in the polling one,
 * polygon's own poll interval of 2 s), the engine reconciling on each ingest commit, the webhook
 * worker woken by NOTIFY, on an embedded Postgres (BENCH_PG_PORT, default 54395) or DATABASE_URL.
 * For each payment: a session (createSession, as the API makes it), its exact transfer sent to
 * anvil's pool, a random pause (so blocks fall anywhere in a poll interval), then one block mined;
 * the clock starts when `evm_mine` returns (the block is visible to any client of the node) and
 * stops when the receiver, a node:http server on loopback in this process, has verified the
 * signature of that session's `payment.confirming` (the receiver's clock: one process, one clock).
 * Each line adds where the median payment was at each step, from the rows' timestamps (same
 * machine clock): the ingester's transaction began (the transfer's `observed_at`), the engine's
 * began (the event's `created_at`), the dispatch's began (the delivery's `created_at`), the HTTP
 * request was sent (the attempt's `started_at`).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { randomBytes } from 'node:crypto';
import type { Address } from 'viem';
import { startAnvil, PAYER } from '../test/helpers/anvil.ts';
import { addWallet, createMerchant } from '../src/accounts/index.ts';
import { createDelivery, createEndpoint } from '../src/delivery/index.ts';
import { createEngine } from '../src/engine/index.ts';
import { createIngest } from '../src/ingest/index.ts';
import { canonicalAddress } from '../src/internal/addresses.ts';
import { loadConfig } from '../src/internal/config.ts';
import { createSecretBox } from '../src/internal/crypto.ts';
import { createLogger } from '../src/internal/logger.ts';
import { createMetricsRegistry } from '../src/internal/metrics.ts';
import { createSession } from '../src/payments/sessions.ts';
import { verifyWebhook } from '../src/receiver/verify.ts';
import { createStore, type Store } from '../src/store/index.ts';
import { migrate } from '../src/store/migrate.ts';
import { benchDatabase, percentile } from './lib.ts';

const { values } = parseArgs({
  options: {
    payments: { type: 'string', default: '40' },
    mode: { type: 'string', default: 'both' },
    'gap-ms': { type: 'string', default: '400' },
  },
});
const PAYMENTS = Number(values.payments);
const GAP_MS = Number(values['gap-ms']);
const USDC: Address = '0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359';
const logger = createLogger({ level: 'warn' });
const box = createSecretBox(randomBytes(32));
const now = () => performance.timeOrigin + performance.now();

/** The merchant's receiver: verifies each delivery's signature, notes when each session's `payment.confirming` arrived. */
async function startReceiver(secret: () => string) {
  const confirming = new Map<string, number>();
  const waiting = new Map<string, () => void>();
  let rejected = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', async () => {
      try {
        const event = await verifyWebhook(Buffer.concat(chunks), req.headers, secret());
        const at = now();
        const sessionId = (event.data as { id?: string }).id;
        if (event.event === 'payment.confirming' && sessionId && !confirming.has(sessionId)) {
          confirming.set(sessionId, at);
          waiting.get(sessionId)?.();
        }
        res.writeHead(200).end();
      } catch {
        rejected += 1;
        res.writeHead(400).end();
      }
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    get rejected() {
      return rejected;
    },
    /** When the session's verified `payment.confirming` arrived (receiver's clock). */
    arrival(sessionId: string, timeoutMs = 15_000): Promise<number> {
      const known = confirming.get(sessionId);
      if (known !== undefined) return Promise.resolve(known);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no payment.confirming for ${sessionId} within ${timeoutMs} ms`)), timeoutMs);
        waiting.set(sessionId, () => {
          clearTimeout(timer);
          resolve(confirming.get(sessionId)!);
        });
      });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function main() {
  const database = await benchDatabase('latency', 54395);
  const { connectionString } = database;
  await migrate({ connectionString });
  const store = createStore({ connectionString });
  const anvil = await startAnvil({ chain: 'polygon', automine: false });
  let secret = '';
  const receiver = await startReceiver(() => secret);
  const stop = new AbortController();
  const metrics = createMetricsRegistry({ defaultMetrics: false });
  const engine = createEngine({ store, logger, metrics });
  const engineRun = engine.run(stop.signal);
  const delivery = createDelivery({ store, logger, metrics, box, config: { webhookAllowPrivate: true, webhookAllowPrivateSandbox: true } });
  try {
    await anvil.installChainTokens();
    const { merchant } = await createMerchant(store, box, { name: 'latency bench' });
    const wallet = canonicalAddress('polygon', `0x${randomBytes(20).toString('hex')}`)! as Address;
    await addWallet(store, { merchantId: merchant.id, chain: 'polygon', address: wallet, verifiedBy: 'operator' });
    secret = (await createEndpoint(store, box, { merchantId: merchant.id, livemode: true, url: receiver.url })).secret;
    await anvil.waitMined(await anvil.mint(USDC, PAYER, 10n ** 15n));
    await delivery.start();

    const modes = values.mode === 'both' ? ['ws', 'poll'] : [values.mode!];
    for (const mode of modes) {
      const ingest = createIngest({
        config: loadConfig({ SVC_POLYGON_RPC_URL: anvil.rpcUrl, ...(mode === 'ws' ? { SVC_POLYGON_WS_URL: anvil.rpcUrl.replace('http', 'ws') } : {}) }),
        store,
        connectionString,
        logger,
        metrics,
        onChainChange: (change) => engine.onChainChange(change),
        overrides: { backfillBlocks: 0 },
      });
      try {
        await waitUntilCaughtUp(store, await anvil.blockNumber());
        const samples = await measure(store, mode, merchant.id, wallet);
        const sorted = samples.map((sample) => sample.total).sort((a, b) => a - b);
        const line = [50, 90, 99].map((p) => `p${p} ${percentile(sorted, p).toFixed(1)} ms`).join(', ');
        console.log(`${mode === 'ws' ? 'WebSocket newHeads' : 'HTTP polling (2 s)'}: ${samples.length} payments, ${line}, max ${sorted.at(-1)!.toFixed(1)} ms`);
        const median = (pick: (sample: Sample) => number) =>
          percentile(
            samples.map(pick).sort((a, b) => a - b),
            50,
          ).toFixed(0);
        console.log(
          `  median ms after the block: ingest tx ${median((x) => x.ingest)}, engine tx ${median((x) => x.engine)}, dispatch tx ${median((x) => x.dispatch)}, HTTP sent ${median((x) => x.sent)}, verified ${median((x) => x.total)}`,
        );
      } finally {
        await ingest.stop();
      }
    }
    if (receiver.rejected > 0) throw new Error(`${receiver.rejected} deliveries failed verification`);
  } finally {
    stop.abort();
    await engineRun;
    await delivery.stop();
    await receiver.close();
    await anvil.stop();
    await store.close();
    await database.close();
  }

  async function measure(store: Store, mode: string, merchantId: string, wallet: Address): Promise<Sample[]> {
    const samples: Sample[] = [];
    for (let i = 0; i < PAYMENTS; i++) {
      const session = await store.transaction((sql) =>
        createSession(sql, {
          merchantId,
          livemode: true,
          amount: `${mode === 'ws' ? 1 : 2}.${String(i).padStart(2, '0')}`,
          currency: 'USDC',
          chain: 'polygon',
          merchantWallet: wallet,
          monitorWindowSeconds: 3600,
        }),
      );
      await anvil.transfer(USDC, PAYER, wallet, session.amountDue);
      await new Promise((resolve) => setTimeout(resolve, Math.random() * GAP_MS));
      await anvil.mine(1);
      const visible = now();
      const total = (await receiver.arrival(session.id)) - visible;
      // The attempt is logged once the receiver has answered: wait for its row.
      const steps = () =>
        store.query<{ ingest: Date; engine: Date; dispatch: Date; sent: Date }>(
          `SELECT t.observed_at AS ingest, e.created_at AS engine, d.created_at AS dispatch, a.started_at AS sent
           FROM transfers t JOIN events e ON e.session_id = t.session_id AND e.type = 'payment.confirming'
           JOIN webhook_deliveries d ON d.event_id = e.id JOIN webhook_attempts a ON a.delivery_id = d.id
          WHERE t.session_id = $1 ORDER BY a.started_at LIMIT 1`,
          [session.id],
        );
      let rows = (await steps()).rows;
      for (let tries = 0; rows.length === 0 && tries < 100; tries++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        rows = (await steps()).rows;
      }
      const row = rows[0]!;
      samples.push({
        total,
        ingest: row.ingest.getTime() - visible,
        engine: row.engine.getTime() - visible,
        dispatch: row.dispatch.getTime() - visible,
        sent: row.sent.getTime() - visible,
      });
    }
    return samples;
  }
}

/** One payment: ms from its block becoming visible to each step, and to the verified delivery (`total`). */
interface Sample {
  ingest: number;
  engine: number;
  dispatch: number;
  sent: number;
  total: number;
}

/** Resolves once the ingester's checkpoint reaches `block`. */
async function waitUntilCaughtUp(store: Store, block: bigint): Promise<void> {
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; ) {
    const { rows } = await store.query<{ processed_block: bigint | null }>("SELECT processed_block FROM chain_heads WHERE livemode AND chain = 'polygon'");
    if (rows[0]?.processed_block != null && BigInt(rows[0].processed_block) >= block) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('the ingester did not catch up within 30 s');
}

await main();
// viem keeps the closed subscription's WebSocket client in its cache (with a keep-alive timer),
// which would hold the process open; everything else is closed above.
process.exit(0);
