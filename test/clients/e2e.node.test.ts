import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, expect, test } from 'vitest';
import { useDaemon } from '../helpers/clientDaemon.ts';
import { AuthenticationError, BadRequestError, createGatewayClient, NotFoundError } from '../../clients/node/src/index.ts';

const run = promisify(execFile);
const daemon = useDaemon('clients_e2e_node');
const installDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-client-node-'));
afterAll(() => fs.rmSync(installDir, { recursive: true, force: true }));

/**
 * @svc/gateway as a merchant gets it: built with tsc from clients/node, its package.json beside
 * dist/, in a node_modules of its own (what `npm install @svc/gateway` leaves).
 */
async function installBuiltPackage(): Promise<string> {
  const packageDir = path.join(installDir, 'node_modules/@svc/gateway');
  // Emit only: the types are checked by the repository's `npm run typecheck`.
  await run(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'clients/node/tsconfig.json', '--outDir', path.join(packageDir, 'dist'), '--noCheck']);
  fs.copyFileSync('clients/node/package.json', path.join(packageDir, 'package.json'));
  fs.copyFileSync('clients/node/examples/quickstart.mjs', path.join(installDir, 'quickstart.mjs'));
  return installDir;
}

test('the Node quick start against a real daemon: create a sandbox session, list it, pay it, receive its webhooks and verify them with the built package', async () => {
  const dir = await installBuiltPackage();
  expect(fs.existsSync(path.join(dir, 'node_modules/@svc/gateway/dist/index.d.ts'))).toBe(true);
  const { stdout } = await run(process.execPath, ['quickstart.mjs'], {
    cwd: dir,
    env: { ...process.env, SVC_API_KEY: daemon.testKey, SVC_WEBHOOK_SECRET: daemon.webhookSecret, SVC_BASE_URL: daemon.baseUrl },
    timeout: 40_000,
  });
  const sessionId = /^created (ses_\w+): pay 25(?:\.\d+)? USDC on base to 0x/m.exec(stdout)?.[1];
  expect(sessionId, stdout).toBeDefined();
  expect(stdout).toContain(`listed ${sessionId} status=pending`);
  expect(stdout).toMatch(/^paid 25(?:\.\d+)? in the sandbox, tx 0x[0-9a-f]{64}$/m);
  // The secret the first start printed verified them.
  expect(stdout).toMatch(new RegExp(`^✓ payment\\.confirming evt_\\w+ ${sessionId} status=confirming signature verified$`, 'm'));
  expect(stdout).toMatch(new RegExp(`^✓ payment\\.confirmed evt_\\w+ ${sessionId} status=confirmed signature verified$`, 'm'));
  expect(stdout).not.toContain('✗');
  // And it was not rotated: the README's path (that printed secret) keeps working, with no overlap running.
  const info = await createGatewayClient({ apiKey: daemon.testKey, baseUrl: daemon.baseUrl }).webhookSecret.retrieve();
  expect(info.previousSecretExpiresAt).toBeNull();
});

test('the daemon serves the OpenAPI document the clients were generated from', async () => {
  const served = (await (await fetch(`${daemon.baseUrl}/openapi.json`)).json()) as { paths: unknown; servers: unknown };
  const snapshot = JSON.parse(fs.readFileSync('clients/openapi.json', 'utf8')) as { paths: unknown; servers: unknown };
  expect({ ...served, servers: undefined }).toEqual({ ...snapshot, servers: undefined });
});

test("against the real daemon: both key headers, pages walked with startingAfter, idempotent replays, and typed errors with the daemon's messages", async () => {
  const bearer = createGatewayClient({ apiKey: daemon.testKey, baseUrl: daemon.baseUrl });
  const apiKey = createGatewayClient({ apiKey: daemon.testKey, baseUrl: daemon.baseUrl, authHeader: 'x-api-key' });
  const created = [];
  for (const amount of ['1', '2', '3']) created.push(await apiKey.payments.create({ amount, currency: 'USDT', chain: 'polygon' }));
  const replayed = await bearer.payments.create({ amount: '1', currency: 'USDT', chain: 'polygon' }, { idempotencyKey: 'e2e-order-1' });
  expect(await bearer.payments.create({ amount: '1', currency: 'USDT', chain: 'polygon' }, { idempotencyKey: 'e2e-order-1' })).toEqual(replayed);

  const walked: string[] = [];
  for await (const payment of bearer.payments.list({ limit: 2, currency: 'USDT' })) walked.push(payment.id);
  expect(walked).toEqual([replayed.id, ...created.map((payment) => payment.id).reverse()]);
  expect((await apiKey.payments.list({ limit: 2, currency: 'USDT' })).hasMore).toBe(true);

  await expect(bearer.payments.retrieve('ses_doesNotExist000000')).rejects.toBeInstanceOf(NotFoundError);
  await expect(bearer.payments.create({ amount: '-1', currency: 'USDT', chain: 'polygon' })).rejects.toSatisfy(
    (error) => error instanceof BadRequestError && error.status === 400 && /amount/.test(error.message) && /^req_/.test(error.requestId ?? ''),
  );
  await expect(createGatewayClient({ apiKey: 'svc_test_wrong', baseUrl: daemon.baseUrl }).status.retrieve()).rejects.toBeInstanceOf(AuthenticationError);
});
