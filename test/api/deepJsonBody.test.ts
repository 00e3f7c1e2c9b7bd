import { afterAll, beforeAll, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { buildApi, newMerchant } from '../helpers/api.ts';
import { createSandbox } from '../../src/sandbox/index.ts';
import { loadChains } from '../../src/internal/chains.ts';
import { createLogger } from '../../src/internal/logger.ts';

// Found by bench/chaos/fuzz.ts: a JSON body nested thousands of levels deep.
const db = useTestDatabase('deep_json_body');
let app: ReturnType<typeof buildApi>;
let keys: Awaited<ReturnType<typeof newMerchant>>;

beforeAll(async () => {
  const sandbox = createSandbox({ store: db.store, logger: createLogger({ level: 'silent' }), chains: loadChains(), blockMs: 10, reconcile: async () => {} });
  app = buildApi(db.store, { sandbox });
  await app.ready();
  keys = await newMerchant(db.store);
});
afterAll(() => app.close());

const deep = (depth: number) => `{"metadata":${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}}`;

test('with an Idempotency-Key too (its request fingerprint is stored): a deep body is a 4xx {"error"}, never a 500', async () => {
  for (const url of ['/v1/sandbox/sessions/0__NQ/sweep', '/api/v1/sandbox/sessions/ses_x/sweep', '/api/v1/payments', '/api/v1/refunds']) {
    const answer = await app.inject({
      method: 'POST',
      url,
      headers: { authorization: `Bearer ${keys.test}`, 'content-type': 'application/json', 'idempotency-key': `deep-${url}` },
      payload: deep(5_000),
    });
    expect(answer.statusCode, `${url}: ${answer.body}`).toBeLessThan(500);
    expect(answer.json(), url).toEqual({ error: expect.any(String) });
  }
});

test('a JSON body nested 5,000 deep is a 400 {"error"} on every operation that takes a body or none, never a 500', async () => {
  for (const url of ['/v1/sandbox/sessions/ses_x/sweep', '/api/v1/payments', '/api/v1/webhooks/we_x/test', '/api/v1/brand/logo']) {
    for (const [method, depth] of [
      ['POST', 5_000],
      ['POST', 50_000],
      ['DELETE', 20_000],
    ] as const) {
      const answer = await app.inject({
        method,
        url,
        headers: { authorization: `Bearer ${keys.test}`, 'content-type': 'application/json' },
        payload: deep(depth),
      });
      expect(answer.statusCode, `${method} ${url}: ${answer.body}`).toBeLessThan(500);
      expect(answer.json(), `${method} ${url}`).toEqual({ error: expect.any(String) });
    }
  }
});
