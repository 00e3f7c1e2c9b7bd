import { describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { newMerchant, useApi } from '../helpers/api.ts';
import { listAudit } from '../../src/accounts/index.ts';
import { JPEG, png } from '../helpers/images.ts';

const db = useTestDatabase('api_brand');
const { call } = useApi(db);

const upload = (bytes: Buffer, contentType = 'image/png') => ({ contentType, data: bytes.toString('base64') });

describe('the merchant brand API', () => {
  test('PATCH /brand renames, sets colour and support contacts, clears with null; each change audited', async () => {
    const m = await newMerchant(db.store, 'Default merchant');
    const changed = await call('PATCH', '/api/v1/brand', {
      key: m.live,
      body: { name: '  Acme Coffee ', accentColor: '#1A73E8', supportEmail: 'help@acme.example', supportUrl: 'https://acme.example/help' },
    });
    expect(changed).toMatchObject({
      status: 200,
      body: { name: 'Acme Coffee', accentColor: '#1a73e8', supportEmail: 'help@acme.example', supportUrl: 'https://acme.example/help', logo: null },
    });
    expect((await call('PATCH', '/api/v1/brand', { key: m.live, body: { supportEmail: null } })).body.supportEmail).toBeNull();
    expect((await call('GET', '/api/v1/brand', { key: m.readOnly })).body).toMatchObject({ name: 'Acme Coffee', supportEmail: null });
    const entries = await listAudit(db.store, m.id, { action: 'merchant.brand_changed' });
    expect(entries.map((e) => e.details)).toEqual([
      { supportEmail: null },
      { name: 'Acme Coffee', accentColor: '#1a73e8', supportEmail: 'help@acme.example', supportUrl: 'https://acme.example/help' },
    ]);
    expect(entries[0]!.actor).toMatch(/^API key key_/);
  });

  test.each([
    [{ accentColor: 'red' }, 'accentColor must be a colour written #rrggbb'],
    [{ accentColor: '#12345g' }, 'accentColor must be a colour written #rrggbb'],
    [{ supportUrl: 'http://acme.example/help' }, 'supportUrl must be an https URL'],
    [{ supportUrl: 'javascript:alert(1)' }, 'supportUrl must be an https URL'],
    [{ supportEmail: 'not an email' }, 'supportEmail must be an email address'],
    [{ name: '   ' }, 'name must not be empty'],
    [{}, 'body must not be empty'],
  ])('PATCH /brand %j is a 400 that changes nothing', async (body, error) => {
    const m = await newMerchant(db.store, 'Before');
    const answer = await call('PATCH', '/api/v1/brand', { key: m.live, body });
    expect(answer.status).toBe(400);
    expect(answer.body.error).toContain(error);
    expect((await call('GET', '/api/v1/brand', { key: m.live })).body).toMatchObject({ name: 'Before', accentColor: null, supportUrl: null });
    expect(await listAudit(db.store, m.id, { action: 'merchant.brand_changed' })).toEqual([]);
  });

  test('a test key or a read-only key cannot change the brand or the logo (403)', async () => {
    const m = await newMerchant(db.store);
    const readOnlyLive = await m.key(true, ['read']);
    for (const key of [m.test, m.readOnly, readOnlyLive]) {
      expect((await call('PATCH', '/api/v1/brand', { key, body: { name: 'Phish' } })).status).toBe(403);
      expect((await call('POST', '/api/v1/brand/logo', { key, body: upload(png(10, 10)) })).status).toBe(403);
      expect((await call('DELETE', '/api/v1/brand/logo', { key })).status).toBe(403);
    }
    expect((await call('GET', '/api/v1/brand', { key: m.live })).body).toMatchObject({ name: 'Shop', logo: null });
  });

  test('POST /brand/logo stores a PNG or JPEG, audited; DELETE removes it', async () => {
    const m = await newMerchant(db.store);
    const stored = await call('POST', '/api/v1/brand/logo', { key: m.live, body: upload(png(120, 40)) });
    expect(stored.status).toBe(200);
    expect(stored.body.logo.sha256).toMatch(/^[0-9a-f]{64}$/);
    const jpeg = await call('POST', '/api/v1/brand/logo', { key: m.live, body: upload(JPEG, 'image/jpeg') });
    expect(jpeg.body.logo.sha256).not.toBe(stored.body.logo.sha256);
    const set = await listAudit(db.store, m.id, { action: 'merchant.logo_set' });
    expect(set.map((e) => e.details)).toEqual([
      { contentType: 'image/jpeg', width: 32, height: 16, bytes: JPEG.length, sha256: jpeg.body.logo.sha256 },
      expect.objectContaining({ contentType: 'image/png', width: 120, height: 40 }),
    ]);
    expect((await call('DELETE', '/api/v1/brand/logo', { key: m.live })).body.logo).toBeNull();
    expect(await listAudit(db.store, m.id, { action: 'merchant.logo_removed' })).toHaveLength(1);
  });

  const svg = Buffer.from('<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>');
  test.each([
    ['an SVG declared as PNG', upload(svg), 'SVG logos are not accepted'],
    ['an SVG declared as SVG', { contentType: 'image/svg+xml', data: svg.toString('base64') }, 'contentType must be one of'],
    ['HTML with a PNG type', upload(Buffer.from('<html><script>alert(1)</script></html>')), 'not a PNG, JPEG or WebP image'],
    ['a GIF', upload(Buffer.from('GIF89a\x01\x00\x01\x00\x00\x00\x00;', 'latin1')), 'not a PNG, JPEG or WebP image'],
    ['a JPEG declared as PNG', upload(JPEG, 'image/png'), 'declared image/png but its bytes are image/jpeg'],
    ['a PNG of 4000×10 pixels', upload(png(4000, 10)), 'at most 2048×2048'],
    ['a PNG claiming 100000×100000 pixels', upload(png(100_000, 1)), 'at most 2048×2048'],
    ['over 256 KiB', upload(Buffer.concat([png(10, 10), Buffer.alloc(262_144)])), 'at most 262144'],
  ])('POST /brand/logo refuses %s (400) and stores nothing', async (_name, body, error) => {
    const m = await newMerchant(db.store);
    const answer = await call('POST', '/api/v1/brand/logo', { key: m.live, body });
    expect(answer.status).toBe(400);
    expect(answer.body.error).toContain(error);
    expect((await call('GET', '/api/v1/brand', { key: m.live })).body.logo).toBeNull();
    expect(await listAudit(db.store, m.id, { action: 'merchant.logo_set' })).toEqual([]);
  });
});
