/**
 * A server for bench/api.ts, run in its own process so that the load generator does not share
 * its event loop: `api` (the real API, as the daemon builds it) or `ceiling` (node:http and a pg
 * Pool of the same size: `GET /s/<id>` is one primary-key SELECT, `POST /c` one INSERT committed
 * durably: the most a Node server can answer per request on this database).
 *
 * Reads DATABASE_URL, BENCH_BOX_KEY (hex) and BENCH_POOL_SIZE; sends `{ url }` to the parent once
 * listening, answers the message `cpu` with its `process.cpuUsage()`, exits cleanly on the
 * message `stop` (so `--cpu-prof` writes its profile) and at once when the parent goes away.
 *
 *   node --import tsx bench/apiServer.ts api|ceiling
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { createSecretBox } from '../src/internal/crypto.ts';
import { createStore } from '../src/store/index.ts';
import { listenBenchApi } from './lib.ts';

/** Both servers' pool size: BENCH_POOL_SIZE, else the daemon's default (src/store/index.ts). */
const POOL_SIZE = Number(process.env.BENCH_POOL_SIZE ?? 10);

const kind = process.argv[2];
const connectionString = process.env.DATABASE_URL!;

async function startCeiling(): Promise<{ url: string; close(): Promise<void> }> {
  const pool = new pg.Pool({ connectionString, max: POOL_SIZE });
  const server = http.createServer((request, response) => {
    if (request.method === 'POST') return commit(request, response);
    const id = request.url!.slice('/s/'.length);
    pool.query('SELECT * FROM payment_sessions WHERE id = $1', [id]).then(
      ({ rows }) => {
        response.writeHead(rows[0] ? 200 : 404, { 'content-type': 'application/json' });
        response.end(JSON.stringify(rows[0] ?? { error: 'not found' }));
      },
      (error: Error) => {
        response.writeHead(500).end(error.message);
      },
    );
  });
  // The creation ceiling: the request's body stored with one INSERT, committed durably (the
  // database's commits per second through the same pool; the bench creates the table). With
  // `x-round-trips: n` (n >= 3) the INSERT runs in a transaction of n statements (BEGIN, n - 3
  // `SELECT 1`, the INSERT, COMMIT), each a round trip with the connection held, as a creation's are.
  function commit(request: http.IncomingMessage, response: http.ServerResponse): void {
    const chunks: Buffer[] = [];
    const roundTrips = Number(request.headers['x-round-trips'] ?? 1);
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const insert = (sql: pg.Pool | pg.PoolClient) =>
        sql.query('INSERT INTO bench_ceiling_commits (body) VALUES ($1) RETURNING id::text', [Buffer.concat(chunks).toString()]);
      const work = roundTrips < 3 ? insert(pool) : inTransaction(roundTrips, insert);
      work.then(
        ({ rows }) => {
          response.writeHead(201, { 'content-type': 'application/json' });
          response.end(JSON.stringify(rows[0]));
        },
        (error: Error) => response.writeHead(500).end(error.message),
      );
    });
  }
  async function inTransaction<T>(roundTrips: number, insert: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      for (let i = 0; i < roundTrips - 3; i++) await client.query('SELECT 1');
      const result = await insert(client);
      await client.query('COMMIT');
      return result;
    } finally {
      client.release();
    }
  }
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await pool.end();
    },
  };
}

async function startApi(): Promise<{ url: string; close(): Promise<void> }> {
  const store = createStore({ connectionString, max: POOL_SIZE });
  const box = createSecretBox(Buffer.from(process.env.BENCH_BOX_KEY!, 'hex'));
  // Live sessions on polygon are accepted (the API never talks to a chain: any URL does).
  const { app, url } = await listenBenchApi({ store, box, env: { SVC_POLYGON_RPC_URL: 'http://rpc.invalid/polygon' } });
  return {
    url,
    async close() {
      await app.close();
      await store.close();
    },
  };
}

const server = kind === 'ceiling' ? await startCeiling() : await startApi();
process.on('message', (message) => {
  // The bench asks for this process's CPU time around each run: CPU per request is the figure
  // that a busy, shared machine disturbs least.
  if (message === 'cpu') process.send!({ cpu: process.cpuUsage() });
  if (message === 'stop') void server.close().finally(() => process.exit(0));
});
// The bench died: do not outlive it.
process.on('disconnect', () => process.exit(1));
process.send!({ url: server.url });
