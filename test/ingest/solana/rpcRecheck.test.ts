import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { KeyPairSigner } from '@solana/kit';
import { useTestDatabase } from '../../helpers/db.ts';
import { startSolanaRpc, type SolanaTestRpc } from '../../helpers/solanaRpc.ts';
import type { SolanaIngester } from '../../../src/ingest/solana/index.ts';
import { createSolanaMerchant, startIngester, transfersOf, waitFor } from '../../helpers/solanaIngest.ts';

// A node whose transaction-status index trails its account updates: the account notification
// arrives, the signature is listed, but getTransaction answers null the first time it is asked.
const db = useTestDatabase('solana_rpc_recheck');
let rpc: SolanaTestRpc;
let proxy: http.Server;
let proxyUrl: string;
let ingester: SolanaIngester;
let merchant: KeyPairSigner;
let payer: KeyPairSigner;
const askedOnce = new Set<string>();

beforeAll(async () => {
  rpc = await startSolanaRpc();
  ({ wallet: merchant } = await createSolanaMerchant(db.store, rpc));
  payer = await rpc.wallet();
  await rpc.fund(payer.address, 'USDC', 1_000_000_000n);
  rpc.ledger.finalize();
  // One request or a JSON-RPC batch (the ingester fetches transactions in batches): each
  // getTransaction is answered null the first time its signature is asked, the rest upstream.
  type Call = { id: unknown; method: string; params: unknown[] };
  const answer = async (call: Call) => {
    if (call.method === 'getTransaction' && !askedOnce.has(call.params[0] as string)) {
      askedOnce.add(call.params[0] as string);
      return { jsonrpc: '2.0', id: call.id, result: null };
    }
    const upstream = await fetch(rpc.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(call) });
    return upstream.json();
  };
  proxy = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Call | Call[];
    const answered = Array.isArray(body) ? await Promise.all(body.map(answer)) : await answer(body);
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(answered));
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  // WebSocket from the real server, HTTP through the proxy; sweeps every 5 s (harness).
  ({ ingester } = startIngester({ store: db.store, rpc: { ...rpc, url: proxyUrl }, websocket: true }));
  await ingester.start();
  // The first pass (a full sweep) is done.
  await waitFor(
    async () => (await db.store.query("SELECT 1 FROM chain_heads WHERE chain = 'solana' AND processed_block IS NOT NULL")).rowCount === 1,
    'the first sweep',
  );
});

afterAll(async () => {
  await ingester?.stop();
  await rpc?.stop();
  await new Promise((resolve) => proxy?.close(resolve));
});

describe('solana ingest, a woken account whose transaction is not served yet', () => {
  test('it is checked again shortly: the payment is stored well before the next sweep', async () => {
    const paid = await rpc.pay({ from: payer, to: merchant.address, currency: 'USDC', amount: 4_200_000n });
    const started = Date.now();
    await waitFor(async () => (await transfersOf(db.store, paid.signature)).length === 1, 'the payment', 10_000);
    expect(askedOnce.has(paid.signature)).toBe(true);
    expect(Date.now() - started).toBeLessThan(2_500);
  });
});
