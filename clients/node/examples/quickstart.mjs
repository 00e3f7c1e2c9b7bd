// The quick start of @svc/gateway (README.md): create a sandbox session, find it in the list,
// pay it on the sandbox's simulated chain, and receive and verify its webhooks.
//
//   SVC_API_KEY=svc_test_… SVC_WEBHOOK_SECRET=whsec_… node quickstart.mjs   # against `npm start` on 127.0.0.1:8080
//
// Both values are the ones the gateway's first `npm start` printed (test API key, webhook secret).
//
// test/clients/e2e.node.test.ts runs this file against a real daemon.
import http from 'node:http';
import { constructWebhookEvent, createGatewayClient, WebhookVerificationError } from '@svc/gateway';

const gateway = createGatewayClient({
  apiKey: process.env.SVC_API_KEY,
  ...(process.env.SVC_BASE_URL ? { baseUrl: process.env.SVC_BASE_URL } : {}),
});

// The secret that signs the sandbox's per-session webhooks: the one the first start printed.
// (Lost it? `svc webhooks rotate-secret --merchant mer_… --mode test` makes a new one.) The quick
// start does not rotate it: every receiver already holding it would stop verifying.
const secret = process.env.SVC_WEBHOOK_SECRET;
if (!secret) throw new Error('set SVC_WEBHOOK_SECRET to the webhook secret the first `npm start` printed (whsec_…)');

// A receiver: verify every delivery over its raw body, refuse anything that is not a sandbox event.
let onConfirmed;
const confirmed = new Promise((resolve) => (onConfirmed = resolve));
const receiver = http.createServer((request, response) => {
  const chunks = [];
  request.on('data', (chunk) => chunks.push(chunk));
  request.on('end', () => {
    try {
      // Synchronous: it returns the event or throws; there is no promise to forget.
      const event = constructWebhookEvent(Buffer.concat(chunks), request.headers, secret, { livemode: false });
      console.log(`✓ ${event.event} ${event.id} ${event.data.id} status=${event.data.status} signature verified`);
      response.writeHead(200).end();
      if (event.event === 'payment.confirmed') onConfirmed(event);
    } catch (error) {
      if (!(error instanceof WebhookVerificationError)) throw error;
      console.log(`✗ refused: ${error.reason}`);
      response.writeHead(400).end(error.reason);
    }
  });
});
await new Promise((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const webhookUrl = `http://127.0.0.1:${receiver.address().port}/webhooks`;

const session = await gateway.sessions.create({ amount: '25.00', currency: 'USDC', chain: 'base', webhookUrl });
console.log(`created ${session.id}: pay ${session.amountDue} ${session.currency} on ${session.chain} to ${session.paymentAddress}`);

for await (const payment of gateway.payments.list({ limit: 10 })) {
  if (payment.id === session.id) console.log(`listed ${payment.id} status=${payment.status}`);
}

const paid = await gateway.sandbox.pay(session.id, { outcome: 'exact' });
console.log(`paid ${paid.amount} in the sandbox, tx ${paid.txHash}`);

const timeout = setTimeout(() => {
  console.log('✗ no payment.confirmed webhook within 30 s');
  process.exit(1);
}, 30_000);
await confirmed;
clearTimeout(timeout);
receiver.close();
receiver.closeAllConnections();
