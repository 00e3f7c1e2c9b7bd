import { describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { main, type Io } from '../../src/cli/main.ts';
import { authenticateApiKey } from '../../src/accounts/index.ts';
import os from 'node:os';
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { createSecretBox } from '../../src/internal/crypto.ts';
import { createEndpoint } from '../../src/delivery/index.ts';
import { verifyWebhook } from '../../src/index.ts';
import { confirmSession, createFakeClock, delivery, insertSession } from '../helpers/delivery.ts';
import { startReceiver, type Received } from '../helpers/webhookReceiver.ts';

const db = useTestDatabase('cli');

/** Runs `svc …` in process against the test database; returns exit code and output. */
async function svc(...argv: string[]) {
  return svcWith({}, ...argv);
}

/** `svc …` with more environment variables. */
async function svcWith(env: Record<string, string>, ...argv: string[]) {
  let out = '';
  let err = '';
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-cli-'));
  const io: Io = {
    env: { DATABASE_URL: db.connectionString, SVC_DATA_DIR: dataDir, LOG_LEVEL: 'warn', ...env },
    out: (text) => (out += text),
    err: (text) => (err += text),
  };
  const code = await main(argv, io);
  return { code, out, err, json: () => JSON.parse(out) };
}

describe('svc CLI', () => {
  test('svc --help lists every command; each command has its own --help', async () => {
    const help = await svc('--help');
    expect(help.code).toBe(0);
    for (const command of [
      'start',
      'migrate',
      'merchants create',
      'wallets add',
      'wallets default',
      'wallets remove',
      'keys create',
      'keys list',
      'keys revoke',
      'webhooks listen',
      'webhooks rotate-secret',
      'config',
    ])
      expect(help.out).toContain(command);
    const keysHelp = await svc('keys', 'create', '--help');
    expect(keysHelp.code).toBe(0);
    expect(keysHelp.out).toContain('Usage: svc keys create --merchant ID --mode test|live');
    expect(keysHelp.out).toContain('--scopes VALUE');
  });

  test('unknown commands and bad options exit 2 with a message', async () => {
    expect((await svc('frobnicate')).code).toBe(2);
    const bad = await svc('keys', 'create', '--merchant', 'mer_x', '--mode', 'staging');
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('--mode must be test or live');
    const unknownFlag = await svc('keys', 'list', '--colour');
    expect(unknownFlag.code).toBe(2);
    expect(unknownFlag.err).toContain("Unknown option '--colour'");
    const json = await svc('keys', 'create', '--json');
    expect(JSON.parse(json.err)).toEqual({ error: '--merchant is required' });
  });

  test('merchants create, keys create / list / revoke, end to end with --json', async () => {
    const created = await svc('merchants', 'create', '--name', 'Acme', '--wallet', 'polygon:0x52908400098527886e0f7030069857d2e4169ee7', '--json');
    expect(created.code).toBe(0);
    const { merchant, webhookSecrets, wallets } = created.json();
    expect(merchant.id).toMatch(/^mer_/);
    expect(webhookSecrets).toEqual({ live: expect.stringMatching(/^whsec_[0-9A-Za-z]{32}$/), sandbox: expect.stringMatching(/^whsec_[0-9A-Za-z]{32}$/) });
    expect(webhookSecrets.live).not.toBe(webhookSecrets.sandbox);
    expect(wallets).toMatchObject([
      { chain: 'polygon', address: '0x52908400098527886E0F7030069857D2E4169EE7', verified: true, verificationMethod: 'operator' },
    ]);

    const key = (await svc('keys', 'create', '--merchant', merchant.id, '--mode', 'live', '--scopes', 'read', '--json')).json();
    expect(key.secret).toMatch(/^svc_live_/);
    expect(key.scopes).toEqual(['read']);
    const auth = await authenticateApiKey(db.store, key.secret);
    expect(auth.ok && auth.apiKey.scopes).toEqual(['read']);

    const listed = (await svc('keys', 'list', '--merchant', merchant.id, '--json')).json();
    expect(listed).toHaveLength(1);
    expect(JSON.stringify(listed)).not.toContain(key.secret);

    const human = await svc('keys', 'list', '--merchant', merchant.id);
    expect(human.out).toContain(`${key.id}  ${merchant.id}  live  svc_live_…${key.secret.slice(-4)}  read  active`);

    const revoked = await svc('keys', 'revoke', key.id, '--json');
    expect(revoked.code).toBe(0);
    expect(revoked.json().revokedAt).toBeTruthy();
    expect(await authenticateApiKey(db.store, key.secret)).toEqual({ ok: false, reason: 'revoked' });
    expect((await svc('keys', 'revoke', 'key_nope')).code).toBe(2);
  });

  test('merchants update raises rate limits, accepts bridged tokens, sets the tolerance and the default attribution; bad values change nothing', async () => {
    const { merchant } = (await svc('merchants', 'create', '--name', 'Settings', '--json')).json();
    const bad = await svc('merchants', 'update', '--merchant', merchant.id, '--create-per-minute', '0', '--accept-bridged', 'true');
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('--create-per-minute must be a whole number from 1 to 1000000');
    const updated = await svc(
      'merchants',
      'update',
      '--merchant',
      merchant.id,
      '--create-per-minute',
      '120',
      '--accept-bridged',
      'true',
      '--tolerance-bps',
      '50',
      '--attribution',
      'address',
      '--json',
    );
    expect(updated.code).toBe(0);
    expect(updated.json()).toEqual({
      id: merchant.id,
      acceptBridgedTokens: true,
      paymentToleranceBps: 50,
      defaultAttribution: 'address',
      createPerMinute: 120,
      readPerMinute: null,
      writePerMinute: null,
    });
    const reset = (await svc('merchants', 'update', '--merchant', merchant.id, '--create-per-minute', 'default', '--json')).json();
    expect(reset).toMatchObject({ createPerMinute: null, acceptBridgedTokens: true, defaultAttribution: 'address' });
    const badMode = await svc('merchants', 'update', '--merchant', merchant.id, '--attribution', 'wallet');
    expect([badMode.code, badMode.err]).toEqual([2, expect.stringContaining('--attribution must be amount or address')]);
  });

  test('wallets: add --default chooses the default explicitly, a second add never moves it, wallets default moves it, wallets remove leaves no default', async () => {
    const A = '0x52908400098527886E0F7030069857D2E4169EE7';
    const B = '0x8617E340B3D01FA5F11F306F4090FD50E238070D';
    const C = '0xde709f2102306220921060314715629080e2fb77';
    const { merchant, wallets } = (await svc('merchants', 'create', '--name', 'Defaults', '--wallet', `polygon:${A}`, '--json')).json();
    expect(wallets).toMatchObject([{ address: A, isDefault: false }]);
    const b = await svc('wallets', 'add', '--merchant', merchant.id, '--wallet', `polygon:${B}`, '--default', '--json');
    expect(b.code).toBe(0);
    expect(b.json()).toMatchObject({ address: B, verified: true, isDefault: true });
    expect((await svc('wallets', 'add', '--merchant', merchant.id, '--wallet', `polygon:${C}`, '--json')).json()).toMatchObject({ isDefault: false });
    const defaults = async () =>
      (await db.store.query('SELECT address FROM wallets WHERE merchant_id = $1 AND is_default', [merchant.id])).rows.map((row) => row.address);
    expect(await defaults()).toEqual([B]);

    const moved = await svc('wallets', 'default', '--merchant', merchant.id, '--wallet', `polygon:${A.toLowerCase()}`);
    expect([moved.code, moved.out.trim()]).toEqual([0, `Wallet ${wallets[0].id}: polygon:${A} is now the default on polygon`]);
    expect(await defaults()).toEqual([A]);
    expect((await svc('merchants', 'list')).out).toContain(`polygon:${A} (default)`);

    const removed = await svc('wallets', 'remove', '--merchant', merchant.id, '--wallet', `polygon:${A}`);
    expect([removed.code, removed.out.trim()]).toEqual([0, `Removed wallet ${wallets[0].id}: polygon:${A} (polygon has no default wallet now)`]);
    expect(await defaults()).toEqual([]);
    const missing = await svc('wallets', 'default', '--merchant', merchant.id, '--wallet', `polygon:${A}`);
    expect(missing.code).toBe(2);
    expect(missing.err).toContain(`merchant ${merchant.id} has no wallet polygon:${A}; add it with svc wallets add`);
    expect(await defaults()).toEqual([]);
  });

  test('a bad wallet is refused and nothing is written', async () => {
    const before = await db.store.query<{ n: number }>('SELECT count(*)::int AS n FROM merchants');
    const result = await svc('merchants', 'create', '--name', 'Bad', '--wallet', 'polygon:0x123');
    expect(result.code).toBe(1);
    expect(result.err).toContain('address "0x123" is not a valid polygon address');
    const after = await db.store.query<{ n: number }>('SELECT count(*)::int AS n FROM merchants');
    expect(after.rows[0]!.n).toBe(before.rows[0]!.n);
  });

  test('webhooks rotate-secret rotates a mode’s secret or an endpoint’s: both verify during the overlap, the old stops after it (or at once with 0)', async () => {
    const key = randomBytes(32);
    const env = { SVC_ENCRYPTION_KEY: key.toString('hex') };
    const box = createSecretBox(key);
    const receiver = await startReceiver();
    try {
      const { merchant, webhookSecrets } = (await svcWith(env, 'merchants', 'create', '--name', 'Rotating', '--json')).json();
      const clock = createFakeClock();
      const deliver = async (livemode: boolean) => {
        const sessionId = await insertSession(db.store, { merchantId: merchant.id, livemode, webhookUrl: `${receiver.url}/session` });
        const event = await confirmSession(db.store, { merchantId: merchant.id, sessionId, livemode });
        await delivery(db.store, { box, clock }).drain();
        return receiver.received.filter((r) => r.headers['x-service-event-id'] === event.id);
      };
      const verdict = (got: Received, secret: string) =>
        verifyWebhook(got.rawBody, got.headers, secret, { now: clock.now() }).then(
          () => 'verified',
          (error) => error.reason,
        );

      const rotated = await svcWith(env, 'webhooks', 'rotate-secret', '--merchant', merchant.id, '--mode', 'test', '--expires-in', '3600', '--json');
      expect(rotated.code, rotated.err).toBe(0);
      const { secret, previousSecretExpiresAt } = rotated.json();
      expect(secret).toMatch(/^whsec_/);
      const [during] = await deliver(false);
      expect(await verdict(during!, secret)).toBe('verified');
      expect(await verdict(during!, webhookSecrets.sandbox)).toBe('verified');
      clock.set(new Date(Date.parse(previousSecretExpiresAt) + 1_000));
      const [after] = await deliver(false);
      expect(await verdict(after!, secret)).toBe('verified');
      expect(await verdict(after!, webhookSecrets.sandbox)).toBe('signature_mismatch');

      // Live, at once; the human output says the old one stopped.
      const live = await svcWith(env, 'webhooks', 'rotate-secret', '--merchant', merchant.id, '--mode', 'live', '--expires-in', '0');
      expect(live.out).toContain('the old secret stopped signing now');
      const liveSecret = /new secret \(shown once\): (whsec_\w+)/.exec(live.out)![1]!;
      const [liveGot] = await deliver(true);
      expect(await verdict(liveGot!, liveSecret)).toBe('verified');
      expect(await verdict(liveGot!, webhookSecrets.live)).toBe('signature_mismatch');

      // An endpoint's secret, with the default overlap (24 h).
      const { endpoint, secret: endpointSecret } = await createEndpoint(db.store, box, {
        merchantId: merchant.id,
        livemode: false,
        url: `${receiver.url}/endpoint`,
      });
      const byCli = (await svcWith(env, 'webhooks', 'rotate-secret', '--merchant', merchant.id, '--mode', 'test', '--endpoint', endpoint.id, '--json')).json();
      expect(Date.parse(byCli.previousSecretExpiresAt) - Date.now()).toBeGreaterThan(86_000_000);
      const atEndpoint = (await deliver(false)).find((r) => r.path === '/endpoint')!;
      expect(await verdict(atEndpoint, byCli.secret)).toBe('verified');
      expect(await verdict(atEndpoint, endpointSecret)).toBe('verified');

      const wrongMode = await svcWith(env, 'webhooks', 'rotate-secret', '--merchant', merchant.id, '--mode', 'live', '--endpoint', endpoint.id);
      expect([wrongMode.code, wrongMode.err]).toEqual([2, expect.stringContaining(`has no live webhook endpoint ${endpoint.id}`)]);
      const tooLong = await svc('webhooks', 'rotate-secret', '--merchant', merchant.id, '--mode', 'test', '--expires-in', '86401');
      expect([tooLong.code, tooLong.err]).toEqual([2, expect.stringContaining('--expires-in must be a whole number of seconds from 0 to 86400')]);
    } finally {
      await receiver.close();
    }
  });

  test('svc config lists the variables and reports a bad value by name', async () => {
    let out = '';
    const code = await main(['config'], { env: { PORT: 'x' }, out: (text) => (out += text), err: () => {} });
    expect(code).toBe(1);
    expect(out).toContain('SVC_POLYGON_RPC_URL');
    expect(out).toMatch(/SVC_SOLANA_RELAYER_GAS_ALERT_BELOW .*\(default 0\.05\)/);
    expect(out).toContain('PORT="x": must be an integer');
  });
});
