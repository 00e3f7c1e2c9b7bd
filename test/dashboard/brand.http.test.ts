import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { useTestDatabase } from '../helpers/db.ts';
import { buildApi } from '../helpers/api.ts';
import { png } from '../helpers/images.ts';
import { addUserWithPassword, newMerchantWithOwner, signedInClient } from '../helpers/dashboard.ts';
import { getMerchantBrand, getMerchantLogo, listAudit, setMerchantLogo } from '../../src/accounts/index.ts';

/** Settings › Brand over HTTP: owners change it (audited), developers and viewers cannot, bad values change nothing. */
const db = useTestDatabase('dashboard_brand');
let app: FastifyInstance;
beforeAll(async () => {
  app = buildApi(db.store);
  await app.ready();
});
afterAll(() => app?.close());

const BRAND = { name: 'Acme Coffee', accentColor: '#2E7D32', supportEmail: 'help@acme.example', supportUrl: 'https://acme.example/help' };

describe('dashboard brand settings', () => {
  test('an owner renames and brands the merchant; the change is audited with the user', async () => {
    const { merchantId, owner } = await newMerchantWithOwner(db.store);
    const client = await signedInClient(app, owner.email);
    const saved = await client.post('/dashboard/settings/brand', BRAND);
    expect(saved.status).toBe(303);
    expect(await getMerchantBrand(db.store, merchantId)).toMatchObject({ ...BRAND, accentColor: '#2e7d32' });
    const [entry] = await listAudit(db.store, merchantId, { action: 'merchant.brand_changed' });
    expect(entry).toMatchObject({ userId: owner.id, details: { ...BRAND, accentColor: '#2e7d32' } });
    const shown = await client.get('/dashboard/settings/brand');
    expect(shown.body).toContain('Acme Coffee');
    expect(shown.body).toContain('#2e7d32');
  });

  test.each([
    [{ ...BRAND, accentColor: 'green' }, 'accentColor must be a colour written #rrggbb'],
    [{ ...BRAND, supportEmail: 'nope' }, 'supportEmail must be an email address'],
    [{ ...BRAND, supportUrl: 'javascript:alert(1)' }, 'supportUrl must be an'],
    [{ ...BRAND, name: '' }, 'name must not be empty'],
  ])('a bad value is refused with its reason and changes nothing: %j', async (body, error) => {
    const { merchantId, owner } = await newMerchantWithOwner(db.store);
    const before = await getMerchantBrand(db.store, merchantId);
    const client = await signedInClient(app, owner.email);
    const answer = await client.post('/dashboard/settings/brand', body);
    expect(answer.status).toBe(400);
    expect(answer.body).toContain(error);
    expect(await getMerchantBrand(db.store, merchantId)).toEqual(before);
    expect(await listAudit(db.store, merchantId, { action: 'merchant.brand_changed' })).toEqual([]);
  });

  test('a developer or a viewer cannot change the brand or remove the logo, even with a valid CSRF token', async () => {
    const { merchantId } = await newMerchantWithOwner(db.store);
    await setMerchantLogo(db.store, merchantId, png(20, 20));
    for (const role of ['developer', 'viewer'] as const) {
      const user = await addUserWithPassword(db.store, { merchantId, role });
      const client = await signedInClient(app, user.email);
      const page = await client.get('/dashboard/settings/brand');
      expect(page.status).toBe(200);
      expect(page.body).not.toContain('Save brand');
      expect((await client.post('/dashboard/settings/brand', BRAND)).status).toBe(403);
      expect((await client.post('/dashboard/settings/brand/logo/remove')).status).toBe(403);
      // The logo is shown to every role, from the dashboard's own origin.
      const logo = await client.get('/dashboard/settings/brand/logo');
      expect(logo.status).toBe(200);
      expect(logo.headers['content-type']).toBe('image/png');
    }
    expect((await getMerchantBrand(db.store, merchantId))?.name).not.toBe('Acme Coffee');
    expect(await getMerchantLogo(db.store, merchantId)).toBeDefined();
    expect(await listAudit(db.store, merchantId)).not.toContainEqual(expect.objectContaining({ action: 'merchant.brand_changed' }));
  });

  test('an owner removes the logo (audited)', async () => {
    const { merchantId, owner } = await newMerchantWithOwner(db.store);
    await setMerchantLogo(db.store, merchantId, png(20, 20));
    const client = await signedInClient(app, owner.email);
    expect((await client.post('/dashboard/settings/brand/logo/remove')).status).toBe(303);
    expect(await getMerchantLogo(db.store, merchantId)).toBeUndefined();
    expect(await listAudit(db.store, merchantId, { action: 'merchant.logo_removed' })).toHaveLength(1);
  });
});
