import { randomBytes } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { createMerchant } from '../../src/accounts/index.ts';
import { createSecretBox } from '../../src/internal/crypto.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { loadChains } from '../../src/internal/chains.ts';
import { createEngine } from '../../src/engine/index.ts';
import { createSession } from '../../src/payments/sessions.ts';
import { createSandbox, type SandboxOutcome } from '../../src/sandbox/index.ts';
import type { ChainName } from '../../src/internal/config.ts';

const db = useTestDatabase('sandbox');
const BLOCK_MS = 10;

function setup() {
  const logger = createLogger({ level: 'silent' });
  const engine = createEngine({ store: db.store, logger, metrics: createMetricsRegistry({ defaultMetrics: false }), config: { monitorWindowSeconds: 3600 } });
  const sandbox = createSandbox({ store: db.store, logger, chains: loadChains(), blockMs: BLOCK_MS, reconcile: async (p) => void (await engine.reconcile(p)) });
  return { engine, sandbox };
}

async function sandboxSession(chain: ChainName, amount = '25') {
  const { merchant } = await createMerchant(db.store, createSecretBox(randomBytes(32)), { name: 'Sandbox Shop' });
  const session = await db.store.transaction((sql) =>
    createSession(sql, { merchantId: merchant.id, livemode: false, amount, currency: 'USDC', chain, monitorWindowSeconds: 3600, merchantWallet: undefined }),
  );
  return { merchantId: merchant.id, session };
}

async function eventsOf(sessionId: string): Promise<string[]> {
  const { rows } = await db.store.query<{ type: string; livemode: boolean }>('SELECT type, livemode FROM events WHERE session_id = $1 ORDER BY seq', [
    sessionId,
  ]);
  expect(rows.every((row) => row.livemode === false)).toBe(true);
  return rows.map((row) => row.type.replace('payment.', ''));
}

async function statusOf(sessionId: string): Promise<string> {
  const { rows } = await db.store.query<{ status: string }>('SELECT status FROM payment_sessions WHERE id = $1', [sessionId]);
  return rows[0]!.status;
}

/** Ticks the simulated chains until the session's events equal `expected` (or 20 s pass). */
async function untilEvents(sandbox: ReturnType<typeof setup>['sandbox'], sessionId: string, expected: string[]) {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    await sandbox.tick();
    if ((await eventsOf(sessionId)).length >= expected.length) break;
    await new Promise((resolve) => setTimeout(resolve, BLOCK_MS));
  }
  expect(await eventsOf(sessionId)).toEqual(expected);
}

describe('sandbox payments run through the real engine', () => {
  const cases: [SandboxOutcome, ChainName, string[], string][] = [
    ['exact', 'base', ['confirming', 'confirmed', 'settled'], 'settled'],
    ['underpaid', 'polygon', ['confirming', 'underpaid'], 'pending'],
    ['overpaid', 'bsc', ['confirming', 'confirmed', 'overpaid', 'settled'], 'settled'],
    ['late', 'arbitrum', ['expired', 'confirming', 'late_confirmed', 'settled'], 'settled'],
    ['reorged', 'optimism', ['confirming', 'reorged'], 'created'],
    ['failed', 'base', ['confirming', 'underpaid', 'failed'], 'failed'],
    ['expired', 'solana', ['expired'], 'expired'],
    ['exact', 'solana', ['confirming', 'confirmed', 'settled'], 'settled'],
  ];

  test.each(cases)('%s on %s: events %j, final status %s', async (outcome, chain, expected, finalStatus) => {
    const { sandbox } = setup();
    const { merchantId, session } = await sandboxSession(chain);
    const paid = await sandbox.pay({ merchantId, sessionId: session.id, outcome });
    if (outcome === 'expired') expect(paid.txHash).toBeNull();
    else expect(paid.txHash).toMatch(chain === 'solana' ? /^[1-9A-HJ-NP-Za-km-z]{80,90}$/ : /^0x5a4db0c5[0-9a-f]{56}$/);
    await untilEvents(sandbox, session.id, expected);
    expect(await statusOf(session.id)).toBe(finalStatus);
  });

  test('the amounts sent: exact pays amount_due, overpaid 10% more, underpaid half; the received total is exact', async () => {
    const { sandbox } = setup();
    const { merchantId, session } = await sandboxSession('polygon', '10.000001');
    const paid = await sandbox.pay({ merchantId, sessionId: session.id, outcome: 'overpaid' });
    expect(paid.amount).toBe(session.amountDue + session.amountDue / 10n);
    await untilEvents(sandbox, session.id, ['confirming', 'confirmed', 'overpaid', 'settled']);
    const { rows } = await db.store.query<{ amount_received: string }>('SELECT amount_received::text FROM payment_sessions WHERE id = $1', [session.id]);
    expect(BigInt(rows[0]!.amount_received)).toBe(paid.amount);
  });

  test('a live session cannot be paid in the sandbox; a finished session takes no more simulated payments', async () => {
    const { sandbox } = setup();
    const { merchant } = await createMerchant(db.store, createSecretBox(randomBytes(32)), { name: 'Live Shop' });
    const live = await db.store.transaction((sql) =>
      createSession(sql, {
        merchantId: merchant.id,
        livemode: true,
        amount: '5',
        currency: 'USDC',
        chain: 'base',
        monitorWindowSeconds: 3600,
        merchantWallet: '0x52908400098527886E0F7030069857D2E4169EE7',
      }),
    );
    await expect(sandbox.pay({ merchantId: merchant.id, sessionId: live.id, outcome: 'exact' })).rejects.toThrow(`sandbox session ${live.id} not found`);
    const { merchantId, session } = await sandboxSession('base');
    await sandbox.pay({ merchantId, sessionId: session.id, outcome: 'exact' });
    await untilEvents(sandbox, session.id, ['confirming', 'confirmed', 'settled']);
    await expect(sandbox.pay({ merchantId, sessionId: session.id, outcome: 'exact' })).rejects.toThrow('is settled and takes no more simulated payments');
  });

  test('a zero amount is refused as such, not as "nothing left to pay"', async () => {
    const { sandbox } = setup();
    const { merchantId, session } = await sandboxSession('polygon');
    await expect(sandbox.pay({ merchantId, sessionId: session.id, outcome: 'underpaid', amount: '0' })).rejects.toThrow(/^amount must be greater than zero$/);
    await expect(sandbox.pay({ merchantId, sessionId: session.id, outcome: 'exact', amount: '0.000000' })).rejects.toThrow(
      /^amount must be greater than zero$/,
    );
  });
});
