import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { formatUnits, type Address } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import type { Registry } from 'prom-client';
import { useTestDatabase } from '../helpers/db.ts';
import type { Anvil } from '../helpers/anvil.ts';
import { startAnvilStack, type AnvilStack } from '../helpers/anvilStack.ts';
import { deployFactoryOnAnvil, depositSenderOn } from '../helpers/deposits.ts';
import { waitFor } from '../helpers/waitFor.ts';
import type { Config } from '../../src/internal/config.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { newEvmWallet } from '../helpers/engine.ts';
import type { DepositSender } from '../../src/deposits/sender.ts';
import { createSweeper } from '../../src/deposits/sweeper.ts';

/**
 * The worker's automatic sweeper on anvil (polygon, real factory bytecode), fed by the real API,
 * EVM ingester and engine: confirmed address-mode payments are swept into the merchant's wallet,
 * small ones wait for the maximum age, two racing passes sweep each deposit once, a failing
 * forwarder does not stop the others, and the metrics show what waits.
 */
const db = useTestDatabase('deposit_sweeper');
const chain = 'polygon' as const;
const USDC: Address = '0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359';
const DEPTH = 32;
const logger = createLogger({ level: 'silent' });
const relayerKey = generatePrivateKey();

let stack: AnvilStack;
let anvil: Anvil;
let call: AnvilStack['call'];
let merchant: AnvilStack['merchant'];
let wallet: AnvilStack['wallet'];
let config: Config;
let sender: DepositSender;
let closeSender: () => Promise<void>;

beforeAll(async () => {
  stack = await startAnvilStack({
    store: db.store,
    connectionString: db.connectionString,
    chain,
    before: async (chainNode) => {
      await deployFactoryOnAnvil(chainNode);
      await chainNode.client.setBalance({ address: privateKeyToAccount(relayerKey).address, value: 10n ** 19n });
      ({ sender, close: closeSender } = depositSenderOn(chainNode, chain, relayerKey));
    },
  });
  ({ anvil, call, merchant, wallet, config } = stack);
}, 60_000);

afterAll(async () => {
  await closeSender?.();
  await stack?.close();
});

/** A sweeper as a worker builds it, over the test's sender; `sweeper` settings override the defaults. */
function sweeperWith(registry: Registry, sweeper: Partial<Config['sweeper']> = {}) {
  return createSweeper({
    store: db.store,
    logger,
    metrics: registry,
    config: { ...config, sweeper: { ...config.sweeper, ...sweeper } },
    senders: { polygon: sender },
    pollMs: 50,
  });
}

/** `count` address-mode sessions of `to` for `amount`, each paid it at its deposit address and confirmed (blocks mined, the engine agrees). */
async function paidSessions(to: Address, amount: bigint, count = 1): Promise<{ id: string; depositAddress: Address }[]> {
  const sessions = [];
  for (let i = 0; i < count; i++) {
    const answer = await call('POST', '/api/v1/sessions', {
      key: merchant.live,
      body: { amount: formatUnits(amount, 6), currency: 'USDC', chain, merchantWallet: to, attribution: 'address' },
    });
    expect(answer.status).toBe(201);
    await anvil.waitMined(await anvil.mint(USDC, answer.body.depositAddress, amount));
    sessions.push(answer.body as { id: string; depositAddress: Address });
  }
  await anvil.mine(DEPTH);
  for (const session of sessions)
    await waitFor(
      async () => (await call('GET', `/api/v1/sessions/${session.id}`, { key: merchant.live })).body.status === 'confirmed',
      `${session.id} confirmed`,
      20_000,
    );
  return sessions;
}

async function gauge(registry: Registry, name: string, labels: Record<string, string>): Promise<number> {
  const metric = registry.getSingleMetric(name);
  const values = (await metric!.get()).values;
  return values.filter((value) => Object.entries(labels).every(([key, label]) => value.labels[key] === label)).reduce((sum, value) => sum + value.value, 0);
}

const itemsOf = async (sessionIds: string[]) =>
  (
    await db.store.query<{ session_id: string; outcome: string; amount: string | null }>(
      `SELECT session_id, outcome, amount::text FROM deposit_sweep_items WHERE session_id = ANY($1) ORDER BY session_id`,
      [sessionIds],
    )
  ).rows;

describe('the automatic deposit sweeper', () => {
  test('confirmed payments are swept into the wallet; the metrics show the value waiting before and 0 after', async () => {
    const registry = createMetricsRegistry({ defaultMetrics: false });
    const to = await wallet();
    // Paid but not yet confirmed: nothing is swept.
    const answer = await call('POST', '/api/v1/sessions', {
      key: merchant.live,
      body: { amount: '25', currency: 'USDC', chain, merchantWallet: to, attribution: 'address' },
    });
    await anvil.waitMined(await anvil.mint(USDC, answer.body.depositAddress, 25_000_000n));
    await waitFor(
      async () =>
        (await itemsOf([])).length === 0 && (await call('GET', `/api/v1/sessions/${answer.body.id}`, { key: merchant.live })).body.status === 'confirming',
      'confirming',
    );
    expect((await sweeperWith(registry).passChain(chain)).sweeps).toEqual([]);
    const [other] = await paidSessions(to, 7_500_000n);
    // Both confirmed now. A sweeper with a high minimum only reports them.
    const waiting = await sweeperWith(registry, { minimum: { USDC: '1000', USDT: '1000' } }).passChain(chain);
    expect(waiting.sweeps).toEqual([]);
    expect(await gauge(registry, 'svc_deposit_unswept_value', { chain, token: 'USDC' })).toBeCloseTo(32.5, 6);
    expect(await gauge(registry, 'svc_deposit_unswept', { chain, token: 'USDC', age: '1h' })).toBe(2);
    expect(await gauge(registry, 'svc_deposit_unswept_oldest_seconds', { chain, token: 'USDC' })).toBeGreaterThanOrEqual(0);

    const result = await sweeperWith(registry).passChain(chain);
    expect(result.sweeps).toHaveLength(1);
    expect(result.sweeps[0]!.status).toBe('mined');
    expect(await anvil.balanceOf(USDC, to)).toBe(32_500_000n);
    expect(await anvil.balanceOf(USDC, answer.body.depositAddress)).toBe(0n);
    expect((await itemsOf([answer.body.id, other!.id])).map((item) => [item.outcome, item.amount]).sort()).toEqual([
      ['flushed', '25000000'],
      ['flushed', '7500000'],
    ]);
    expect(await gauge(registry, 'svc_deposit_unswept_value', { chain, token: 'USDC' })).toBe(0);
    expect(await gauge(registry, 'svc_deposit_sweeps_total', { chain, outcome: 'succeeded' })).toBe(1);
    expect(await gauge(registry, 'svc_deposit_sweep_gas_used_total', { chain })).toBeGreaterThan(0);
    // Covered: the next pass sweeps nothing.
    expect((await sweeperWith(registry).passChain(chain)).sweeps).toEqual([]);
  }, 60_000);

  test('a deposit below the minimum waits until the maximum age, then is swept', async () => {
    const registry = createMetricsRegistry({ defaultMetrics: false });
    const to = await wallet();
    const [small] = await paidSessions(to, 400_000n);
    expect((await sweeperWith(registry, { maxAgeSeconds: 3_600 }).passChain(chain)).sweeps).toEqual([]);
    expect(await anvil.balanceOf(USDC, small!.depositAddress)).toBe(400_000n);
    expect(await gauge(registry, 'svc_deposit_unswept_value', { chain, token: 'USDC' })).toBeCloseTo(0.4, 6);
    // Observed more than a second ago: with a one-second maximum age it is due.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const result = await sweeperWith(registry, { maxAgeSeconds: 1 }).passChain(chain);
    expect(result.sweeps.flatMap((sweep) => sweep.items.map((item) => [item.sessionId, item.amount]))).toEqual([[small!.id, 400_000n]]);
    expect(await anvil.balanceOf(USDC, to)).toBe(400_000n);
  }, 60_000);

  test('two workers racing a pass sweep each deposit once', async () => {
    const to = await wallet();
    const sessions = await paidSessions(to, 2_000_000n, 3);
    const [a, b] = await Promise.all([
      sweeperWith(createMetricsRegistry({ defaultMetrics: false })).passChain(chain),
      sweeperWith(createMetricsRegistry({ defaultMetrics: false })).passChain(chain),
    ]);
    const items = await itemsOf(sessions.map((s) => s.id));
    expect(items.map((item) => item.session_id).sort()).toEqual(sessions.map((s) => s.id).sort());
    expect(items.every((item) => item.outcome === 'flushed' && item.amount === '2000000')).toBe(true);
    expect(a!.sweeps.length + b!.sweeps.length).toBe(1);
    expect(await anvil.balanceOf(USDC, to)).toBe(6_000_000n);
  }, 60_000);

  test('a failing forwarder does not stop the others, and is not retried at once', async () => {
    const registry = createMetricsRegistry({ defaultMetrics: false });
    const to = await wallet();
    const [good, broken, alsoGood] = await paidSessions(to, 3_000_000n, 3);
    // Code that reverts at the broken session's deposit address: the factory's flush of it fails.
    await anvil.client.setCode({ address: broken!.depositAddress, bytecode: '0x60006000fd' });
    const result = await sweeperWith(registry).passChain(chain);
    expect(result.sweeps).toHaveLength(1);
    const outcomes = Object.fromEntries(result.sweeps[0]!.items.map((item) => [item.sessionId, item.outcome]));
    expect(outcomes).toEqual({ [good!.id]: 'flushed', [broken!.id]: 'failed', [alsoGood!.id]: 'flushed' });
    expect(await anvil.balanceOf(USDC, to)).toBe(6_000_000n);
    expect(await gauge(registry, 'svc_deposit_sweeps_total', { chain, outcome: 'failed' })).toBe(1);
    expect(await gauge(registry, 'svc_deposit_sweep_failures_total', { chain, token: 'USDC' })).toBe(1);
    expect(await gauge(registry, 'svc_deposit_unswept_value', { chain, token: 'USDC' })).toBeCloseTo(3, 6);
    // Backed off: the next pass (within the interval) spends no gas on it.
    expect((await sweeperWith(registry).passChain(chain)).sweeps).toEqual([]);
    // Past the pause (here a short interval) it is tried again.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const retried = await sweeperWith(registry, { intervalMs: 1_000 }).passChain(chain);
    expect(retried.sweeps.flatMap((sweep) => sweep.items.map((item) => item.sessionId))).toEqual([broken!.id]);
  }, 60_000);

  test('a session whose wallet no longer makes its deposit address is not swept (defence in depth)', async () => {
    const registry = createMetricsRegistry({ defaultMetrics: false });
    const to = await wallet();
    const [session] = await paidSessions(to, 5_000_000n);
    await db.store.query('UPDATE payment_sessions SET pay_to = $2 WHERE id = $1', [session!.id, newEvmWallet()]);
    const result = await sweeperWith(registry).passChain(chain);
    expect(result.mismatched).toEqual([session!.id]);
    expect(result.sweeps).toEqual([]);
    expect(await anvil.balanceOf(USDC, session!.depositAddress)).toBe(5_000_000n);
  }, 60_000);
});
