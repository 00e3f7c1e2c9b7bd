import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { box } from '../helpers/api.ts';
import { runSvc } from '../helpers/dashboard.ts';
import { png } from '../helpers/images.ts';
import { createMerchant, getMerchantBrand, getMerchantLogo, listAudit } from '../../src/accounts/index.ts';

const db = useTestDatabase('cli_brand');

test('svc merchants update renames, brands and sets a logo, audited as the operator; a bad value changes nothing', async () => {
  const { merchant } = await createMerchant(db.store, box, { name: 'Default merchant' });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-brand-'));
  const logoFile = path.join(dir, 'logo.png');
  fs.writeFileSync(logoFile, png(200, 80));
  const svgFile = path.join(dir, 'logo.svg');
  fs.writeFileSync(svgFile, '<svg xmlns="http://www.w3.org/2000/svg"/>');

  const ok = await runSvc(
    db.connectionString,
    [
      'merchants',
      'update',
      '--merchant',
      merchant.id,
      '--name',
      'Acme Coffee',
      '--accent-color',
      '#0B5FFF',
      '--support-url',
      'https://acme.example/help',
      '--logo',
      logoFile,
    ],
    { USER: 'alice' },
  );
  expect(ok.err).toBe('');
  expect(ok.code).toBe(0);
  expect(await getMerchantBrand(db.store, merchant.id)).toMatchObject({ name: 'Acme Coffee', accentColor: '#0b5fff', supportUrl: 'https://acme.example/help' });
  expect((await getMerchantLogo(db.store, merchant.id))?.contentType).toBe('image/png');
  const entries = await listAudit(db.store, merchant.id);
  expect(entries.map((e) => e.action)).toEqual(expect.arrayContaining(['merchant.brand_changed', 'merchant.logo_set']));
  expect(entries.find((e) => e.action === 'merchant.brand_changed')!.details).toEqual({
    name: 'Acme Coffee',
    accentColor: '#0b5fff',
    supportUrl: 'https://acme.example/help',
  });

  for (const argv of [
    ['--accent-color', 'blue'],
    ['--logo', svgFile],
    ['--support-url', 'http://acme.example'],
    ['--name', 'Other', '--logo', svgFile],
  ]) {
    const refused = await runSvc(db.connectionString, ['merchants', 'update', '--merchant', merchant.id, ...argv]);
    expect(refused.code).not.toBe(0);
    expect(refused.err).not.toBe('');
  }
  expect((await getMerchantBrand(db.store, merchant.id))?.name).toBe('Acme Coffee');

  const removed = await runSvc(db.connectionString, ['merchants', 'update', '--merchant', merchant.id, '--logo', 'none', '--accent-color', 'none']);
  expect(removed.code).toBe(0);
  expect(await getMerchantLogo(db.store, merchant.id)).toBeUndefined();
  expect((await getMerchantBrand(db.store, merchant.id))?.accentColor).toBeNull();
  expect((await listAudit(db.store, merchant.id, { action: 'merchant.logo_removed' })).length).toBe(1);
});
