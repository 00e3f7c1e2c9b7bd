import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Address } from 'viem';
import { useTestDatabase } from '../helpers/db.ts';
import { startAnvil, type Anvil } from '../helpers/anvil.ts';
import { box, GENEROUS_LIMITS, newMerchant } from '../helpers/api.ts';
import { eventsOf, newEvmWallet } from '../helpers/engine.ts';
import { startLivePipeline, startVerifyingReceiver } from '../helpers/livePipeline.ts';
import { addWallet } from '../../src/accounts/index.ts';
import { createHttp } from '../../src/http.ts';
import { createSandbox, SANDBOX_OUTCOMES } from '../../src/sandbox/index.ts';
import { loadChains } from '../../src/internal/chains.ts';
import { loadConfig } from '../../src/internal/config.ts';
import { waitFor } from '../helpers/waitFor.ts';

/**
 * The sandbox through the HTTP API with webhooks, its isolation from live data, and the claim
 * that matters most: for the same scenario, the sandbox and a real chain (anvil, real EVM
 * ingester) produce the same event sequence, because they share the engine.
 */
const db = useTestDatabase('sandbox_equivalence');
const chain = 'polygon' as const;
const USDC: Address = '0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359';
let anvil: Anvil;
let pipeline: ReturnType<typeof startLivePipeline>;
let app: ReturnType<typeof createHttp>;
let receiver: Awaited<ReturnType<typeof startVerifyingReceiver>>;
let merchant: Awaited<ReturnType<typeof newMerchant>>;

beforeAll(async () => {
  anvil = await startAnvil({ chain });
  await anvil.installChainTokens();
  // 50 ms blocks: the `reorged` outcome removes its payment before 32 blocks pass; at 10 ms that
  // was 320 ms, and a loaded CI machine once let the sandbox confirm it first.
  const config = loadConfig({ SVC_POLYGON_RPC_URL: anvil.rpcUrl, LOG_LEVEL: 'silent', SVC_SANDBOX_BLOCK_MS: '50' });
  pipeline = startLivePipeline({ store: db.store, connectionString: db.connectionString, config });
  const { engine, logger, metrics } = pipeline;
  const sandbox = createSandbox({
    store: db.store,
    logger,
    chains: loadChains(),
    blockMs: 50,
    reconcile: async (change) => void (await engine.reconcile(change)),
  });
  pipeline.track(sandbox.run(pipeline.signal));
  app = createHttp({ store: db.store, logger, metrics, config, box, sandbox, rateLimits: GENEROUS_LIMITS });
  await app.ready();
  merchant = await newMerchant(db.store, 'Twin Shop');

  // The merchant's webhook receiver, verifying every delivery.
  receiver = await startVerifyingReceiver();
  const registered = await app.inject({
    method: 'POST',
    url: '/api/v1/webhooks',
    headers: { authorization: `Bearer ${merchant.test}` },
    payload: { url: receiver.url },
  });
  expect(registered.statusCode).toBe(201);
  receiver.useSecret(registered.json().secret);
  await pipeline.startDelivery({ chain, webhookAllowPrivate: false });
});

afterAll(async () => {
  await pipeline?.close();
  await app?.close();
  await anvil?.stop();
  await receiver?.close();
});

const received = () => receiver.received;

async function api(method: 'GET' | 'POST', url: string, key: string, payload?: unknown) {
  const response = await app.inject({
    method,
    url,
    headers: { authorization: `Bearer ${key}` },
    ...(payload === undefined ? {} : { payload: payload as object }),
  });
  return { status: response.statusCode, body: response.json() };
}

async function createSession(key: string, amount: string, merchantWallet?: string) {
  const created = await api('POST', '/api/v1/sessions', key, { amount, currency: 'USDC', chain, ...(merchantWallet ? { merchantWallet } : {}) });
  expect(created.status).toBe(201);
  return created.body as { id: string; amountDueBaseUnits: string; livemode: boolean };
}

const EXPECTED: Record<string, string[]> = {
  exact: ['payment.confirming', 'payment.confirmed', 'payment.settled'],
  underpaid: ['payment.confirming', 'payment.underpaid'],
  overpaid: ['payment.confirming', 'payment.confirmed', 'payment.overpaid', 'payment.settled'],
  late: ['payment.expired', 'payment.confirming', 'payment.late_confirmed', 'payment.settled'],
  reorged: ['payment.confirming', 'payment.reorged'],
  failed: ['payment.confirming', 'payment.underpaid', 'payment.failed'],
  expired: ['payment.expired'],
};

describe('sandbox through the API and webhooks', () => {
  test.each([...SANDBOX_OUTCOMES])(
    'POST /sandbox/sessions/{id}/pay outcome %s: outbox and verified webhooks carry the same events, livemode false',
    async (outcome) => {
      const session = await createSession(merchant.test, '12.5');
      const paid = await api('POST', `/api/v1/sandbox/sessions/${session.id}/pay`, merchant.test, { outcome });
      expect(paid.status).toBe(200);
      expect(paid.body).toMatchObject({ sessionId: session.id, outcome, livemode: false });
      await waitFor(async () => (await eventsOf(db.store, session.id)).length >= EXPECTED[outcome]!.length, `${outcome} events`);
      expect(await eventsOf(db.store, session.id)).toEqual(EXPECTED[outcome]);
      await waitFor(async () => received().filter((r) => r.sessionId === session.id).length >= EXPECTED[outcome]!.length, `${outcome} webhooks`);
      expect(received().filter((r) => r.sessionId === session.id)).toEqual(
        EXPECTED[outcome]!.map((event) => ({ event, sessionId: session.id, livemode: false })),
      );
      // The sandbox routes its payment by a reference kept on the session; on an EVM chain that is
      // not a Solana Pay key for payers, so neither the API nor the checkout instructions show one.
      expect((await api('GET', `/api/v1/sessions/${session.id}`, merchant.test)).body).toMatchObject({ chain, reference: null });
      const instructions = await app.inject({ method: 'GET', url: `/checkout/${session.id}`, headers: { accept: 'application/json' } });
      expect(instructions.json()).toMatchObject({ reference: null });
    },
  );

  test('isolation both ways: keys see only their mode; live keys cannot simulate; live events never reach a test endpoint', async () => {
    const sandboxSession = await createSession(merchant.test, '3');
    const liveSession = await createSession(merchant.live, '3', newEvmWallet());
    expect(liveSession.livemode).toBe(true);
    expect((await api('GET', `/api/v1/sessions/${sandboxSession.id}`, merchant.live)).status).toBe(404);
    expect((await api('GET', `/api/v1/sessions/${liveSession.id}`, merchant.test)).status).toBe(404);
    expect((await api('GET', `/v1/payments/${liveSession.id}`, merchant.test)).status).toBe(404);
    const forbidden = await api('POST', `/api/v1/sandbox/sessions/${sandboxSession.id}/pay`, merchant.live, { outcome: 'exact' });
    expect(forbidden).toMatchObject({ status: 403, body: { error: expect.stringContaining('sandbox endpoints need a test key') } });
    expect((await api('POST', `/api/v1/sandbox/sessions/${liveSession.id}/pay`, merchant.test, { outcome: 'exact' })).status).toBe(404);
    const listed = await api('GET', '/v1/payments?limit=100', merchant.test);
    expect(listed.body.data.map((p: { id: string }) => p.id)).not.toContain(liveSession.id);
    expect(received().some((r) => r.livemode)).toBe(false);
  });
});

describe('the same scenario on anvil and in the sandbox gives the same events', () => {
  /** A live session paid on anvil by the real chain, ingested by the real EVM ingester. */
  async function onAnvil(scenario: 'exact' | 'underpaid' | 'overpaid' | 'reorged'): Promise<string[]> {
    const to = newEvmWallet() as Address;
    await addWallet(db.store, { merchantId: merchant.id, chain, address: to, verifiedBy: 'operator' });
    const session = await createSession(merchant.live, '12.5', to);
    const due = BigInt(session.amountDueBaseUnits);
    const amount = { exact: due, underpaid: due / 2n, overpaid: due + due / 10n, reorged: due }[scenario];
    await anvil.waitMined(await anvil.pay(USDC, to, amount));
    await waitFor(async () => (await eventsOf(db.store, session.id)).includes('payment.confirming'), 'detection');
    if (scenario === 'reorged') {
      await anvil.reorg(1);
      await anvil.mine(2);
    } else {
      await anvil.mine(32 + 64); // the confirmation depth, then anvil's finalized lag
    }
    const expected = EXPECTED[scenario]!;
    await waitFor(async () => (await eventsOf(db.store, session.id)).length >= expected.length, `${scenario} on anvil`);
    return eventsOf(db.store, session.id);
  }

  async function inSandbox(scenario: string): Promise<string[]> {
    const session = await createSession(merchant.test, '12.5');
    expect((await api('POST', `/api/v1/sandbox/sessions/${session.id}/pay`, merchant.test, { outcome: scenario })).status).toBe(200);
    await waitFor(async () => (await eventsOf(db.store, session.id)).length >= EXPECTED[scenario]!.length, `${scenario} in the sandbox`);
    return eventsOf(db.store, session.id);
  }

  test.each(['exact', 'underpaid', 'overpaid', 'reorged'] as const)('%s', async (scenario) => {
    const [live, simulated] = await Promise.all([onAnvil(scenario), inSandbox(scenario)]);
    expect(simulated).toEqual(live);
    expect(live).toEqual(EXPECTED[scenario]);
  });
});
