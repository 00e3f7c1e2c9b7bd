import { describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { authenticateApiKey, createApiKey, createMerchant, hasScope, listApiKeys, parseKeyPrefix, revokeApiKey } from '../../src/accounts/index.ts';
import { createSecretBox, sha256Hex } from '../../src/internal/crypto.ts';
import { randomBytes } from 'node:crypto';

const db = useTestDatabase('api_keys');
const box = createSecretBox(randomBytes(32));

async function merchant() {
  return (await createMerchant(db.store, box, { name: 'Keys Ltd' })).merchant;
}

describe('API keys', () => {
  test('createApiKey() returns the key once and stores only its SHA-256', async () => {
    const { id } = await merchant();
    const { apiKey, secret } = await createApiKey(db.store, { merchantId: id, livemode: false });
    expect(secret).toMatch(/^svc_test_[0-9A-Za-z]{32}$/);
    expect(apiKey.hint).toBe(`svc_test_…${secret.slice(-4)}`);
    const { rows } = await db.store.query('SELECT * FROM api_keys WHERE id = $1', [apiKey.id]);
    expect(rows[0]!.secret_hash).toBe(sha256Hex(secret));
    expect(JSON.stringify(rows[0])).not.toContain(secret.slice('svc_test_'.length));
  });

  test.each([
    [false, 'plain', 'svc_test_'],
    [true, 'plain', 'svc_live_'],
    [false, 'sk', 'svc_sk_'],
    [true, 'sk', 'svc_sk_live_'],
  ] as const)('livemode=%s style=%s keys start with %s and authenticate', async (livemode, style, prefix) => {
    const { id } = await merchant();
    const { secret } = await createApiKey(db.store, { merchantId: id, livemode, style });
    expect(secret.startsWith(prefix)).toBe(true);
    expect(parseKeyPrefix(secret)).toEqual({ prefix, livemode });
    const result = await authenticateApiKey(db.store, secret);
    expect(result.ok && result.apiKey.livemode).toBe(livemode);
  });

  test('authenticateApiKey() refuses malformed, unknown and revoked keys, and records last use', async () => {
    const { id } = await merchant();
    const { apiKey, secret } = await createApiKey(db.store, { merchantId: id, livemode: true });
    expect(apiKey.lastUsedAt).toBeNull();
    expect(await authenticateApiKey(db.store, 'not-a-key')).toEqual({ ok: false, reason: 'malformed' });
    expect(await authenticateApiKey(db.store, `svc_live_${'x'.repeat(32)}`)).toEqual({ ok: false, reason: 'unknown' });
    // Same secret behind another prefix is another key.
    expect(await authenticateApiKey(db.store, secret.replace('svc_live_', 'svc_test_'))).toEqual({ ok: false, reason: 'unknown' });
    const ok = await authenticateApiKey(db.store, secret);
    expect(ok.ok).toBe(true);
    const [listed] = await listApiKeys(db.store, { merchantId: id });
    expect(listed!.lastUsedAt).toBeInstanceOf(Date);
    const revoked = await revokeApiKey(db.store, apiKey.id);
    expect(revoked!.revokedAt).toBeInstanceOf(Date);
    expect(await authenticateApiKey(db.store, secret)).toEqual({ ok: false, reason: 'revoked' });
    // Revoking again keeps the first time.
    expect((await revokeApiKey(db.store, apiKey.id))!.revokedAt).toEqual(revoked!.revokedAt);
    expect(await revokeApiKey(db.store, 'key_missing')).toBeUndefined();
  });

  test('scopes: a read-only key has read and not write; the database refuses unknown scopes', async () => {
    const { id } = await merchant();
    const { apiKey } = await createApiKey(db.store, { merchantId: id, livemode: false, scopes: ['read'] });
    expect(hasScope(apiKey, 'read')).toBe(true);
    expect(hasScope(apiKey, 'write')).toBe(false);
    const full = await createApiKey(db.store, { merchantId: id, livemode: false });
    expect(full.apiKey.scopes).toEqual(['read', 'write']);
    await expect(createApiKey(db.store, { merchantId: id, livemode: false, scopes: ['admin' as 'read'] })).rejects.toThrow(/check constraint/);
  });
});
