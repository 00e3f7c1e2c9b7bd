import os from 'node:os';
import { describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { runSvc } from '../helpers/dashboard.ts';
import { useApi } from '../helpers/api.ts';
import { addUserWithPassword, signedInClient } from '../helpers/dashboard.ts';
import { listAudit } from '../../src/accounts/index.ts';
import { operatorOf } from '../../src/cli/command.ts';

/**
 * Issue 24: the operator's changes with `svc` land in the merchant's audit log too, named by the
 * operating-system user (the one behind sudo when there is one), in the change's transaction.
 */
const db = useTestDatabase('cli_audit');
const api = useApi(db);
const ENV = { SUDO_USER: 'alice', SVC_ENCRYPTION_KEY: '42'.repeat(32) };
const svc = (...argv: string[]) => runSvc(db.connectionString, argv, ENV);

const A = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
const B = '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC';

async function entries(merchantId: string) {
  return (await listAudit(db.store, merchantId)).reverse().map((entry) => ({
    action: entry.action,
    target: entry.target,
    livemode: entry.livemode,
    actor: entry.actor,
    userId: entry.userId,
    apiKeyId: entry.apiKeyId,
    ip: entry.ip,
  }));
}

describe('the CLI door', () => {
  test('merchants, keys, wallets, settings and secrets changed with svc are audited as the operator who ran it', async () => {
    const created = await svc('merchants', 'create', '--name', 'CLI Shop', '--wallet', `polygon:${A}`, '--json');
    expect(created.code).toBe(0);
    const merchantId = created.json().merchant.id as string;
    const walletA = created.json().wallets[0].id as string;
    const key = await svc('keys', 'create', '--merchant', merchantId, '--mode', 'live', '--json');
    const keyId = key.json().id as string;
    expect((await svc('keys', 'revoke', keyId)).code).toBe(0);
    const walletB = (await svc('wallets', 'add', '--merchant', merchantId, '--wallet', `polygon:${B}`, '--default', '--json')).json().id as string;
    expect((await svc('wallets', 'default', '--merchant', merchantId, '--wallet', `polygon:${A}`)).code).toBe(0);
    expect((await svc('wallets', 'remove', '--merchant', merchantId, '--wallet', `polygon:${B}`)).code).toBe(0);
    expect((await svc('merchants', 'update', '--merchant', merchantId, '--tolerance-bps', '50', '--write-per-minute', '60')).code).toBe(0);
    expect((await svc('webhooks', 'rotate-secret', '--merchant', merchantId, '--mode', 'live', '--expires-in', '0')).code).toBe(0);

    const operator = { actor: 'operator alice (CLI)', userId: null, apiKeyId: null, ip: null };
    expect(await entries(merchantId)).toEqual([
      { action: 'merchant.created', target: merchantId, livemode: null, ...operator },
      { action: 'wallet.added', target: walletA, livemode: null, ...operator },
      { action: 'key.created', target: keyId, livemode: true, ...operator },
      { action: 'key.revoked', target: keyId, livemode: true, ...operator },
      { action: 'wallet.added', target: walletB, livemode: null, ...operator },
      { action: 'wallet.default_set', target: walletB, livemode: null, ...operator },
      { action: 'wallet.default_set', target: walletA, livemode: null, ...operator },
      { action: 'wallet.removed', target: walletB, livemode: null, ...operator },
      { action: 'merchant.settings_changed', target: merchantId, livemode: null, ...operator },
      { action: 'webhook.secret_rotated', target: 'session secret (live)', livemode: true, ...operator },
    ]);
    const all = await listAudit(db.store, merchantId);
    expect(all.find((entry) => entry.action === 'merchant.settings_changed')!.details).toEqual({ paymentToleranceBps: 50, ratePerMinute: { write: 60 } });
    expect(all.find((entry) => entry.action === 'key.created')!.details).toEqual({ hint: key.json().hint, scopes: ['read', 'write'] });
    expect(JSON.stringify(all)).not.toMatch(/whsec_|svc_live_[0-9A-Za-z]{8}/);

    // The dashboard's audit page and export show them.
    const owner = await addUserWithPassword(db.store, { merchantId, role: 'owner' });
    const client = await signedInClient(api.app, owner.email);
    expect((await client.get('/dashboard/audit')).body).toContain('operator alice (CLI)');
    const csv = (await client.get('/dashboard/audit.csv')).body;
    expect(csv).toMatch(/,operator alice \(CLI\),,wallet\.removed,/);

    // A refused command changes nothing and records nothing.
    const before = (await listAudit(db.store, merchantId)).length;
    expect((await svc('wallets', 'default', '--merchant', merchantId, '--wallet', `polygon:${B}`)).code).toBe(2);
    expect((await svc('keys', 'revoke', 'key_unknown')).code).toBe(2);
    expect((await svc('webhooks', 'rotate-secret', '--merchant', merchantId, '--mode', 'live', '--endpoint', 'we_unknown')).code).toBe(2);
    expect((await listAudit(db.store, merchantId)).length).toBe(before);
  });

  test('without sudo the operator is the operating-system user; users invited with svc name them too', async () => {
    expect(operatorOf({ env: {} }).label).toBe(`operator ${os.userInfo().username} (CLI)`);
    expect(operatorOf({ env: { SUDO_USER: 'bob' } }).label).toBe('operator bob (CLI)');
    // Nothing that could pass for markup or another column reaches the log.
    expect(operatorOf({ env: { SUDO_USER: 'eve,<b>' } }).label).toBe('operator eveb (CLI)');
    const merchantId = (await svc('merchants', 'create', '--name', 'Team', '--json')).json().merchant.id as string;
    expect((await svc('users', 'create', '--merchant', merchantId, '--email', 'dev@example.test', '--role', 'developer')).code).toBe(0);
    const invited = (await listAudit(db.store, merchantId)).find((entry) => entry.action === 'user.invited')!;
    expect(invited.actor).toBe('operator alice (CLI)');
  });
});
