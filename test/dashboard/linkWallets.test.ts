import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { addWallet } from '../../src/accounts/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { buildApi } from '../helpers/api.ts';
import { addUserWithPassword, newMerchantWithOwner, signedInClient, type DashboardClient } from '../helpers/dashboard.ts';

/**
 * Who may route live money from the dashboard's payment links (issue 24): a developer's live link
 * names only a verified wallet of the merchant (or none: the chain's default); naming any other
 * address takes the wallet permission (owners). Before, a developer could send a live link's
 * payments to any address. Every link's audit entry names its wallet and webhook URL.
 */
const db = useTestDatabase('dashboard_link_wallets');
let app: FastifyInstance;
beforeAll(async () => {
  app = buildApi(db.store);
  await app.ready();
});
afterAll(() => app?.close());

const BASE_USDC = { chain: 'base', currency: 'USDC' };
const POLYGON_USDT = { chain: 'polygon', currency: 'USDT' };
const newAddress = () => privateKeyToAccount(generatePrivateKey()).address;
const formError = (body: string) => /<p class="form-error" role="alert">([^<]*)<\/p>/.exec(body)?.[1]?.replace(/&#39;/g, "'");
const linksOf = async (merchantId: string) =>
  (await db.store.query('SELECT livemode, merchant_wallet FROM payment_links WHERE merchant_id = $1 ORDER BY created_at, id', [merchantId])).rows;
const linkAudit = async (merchantId: string) =>
  (await db.store.query(`SELECT target, livemode, details FROM audit_log WHERE merchant_id = $1 AND action = 'payment_link.created' ORDER BY id`, [merchantId]))
    .rows;

async function inMode(client: DashboardClient, livemode: boolean): Promise<DashboardClient> {
  expect((await client.post('/dashboard/mode', { livemode: String(livemode) })).status).toBe(303);
  return client;
}

describe('live payment links name only the merchant’s verified wallets unless the user manages wallets', () => {
  test('a developer’s live link to an address that is not a verified wallet is refused and writes nothing; a verified wallet or the default passes', async () => {
    const { merchantId } = await newMerchantWithOwner(db.store);
    const verified = await addWallet(db.store, { merchantId, chain: 'base', address: newAddress(), verifiedBy: 'operator', makeDefault: true });
    const unverified = await addWallet(db.store, { merchantId, chain: 'base', address: newAddress() });
    const onOtherChain = await addWallet(db.store, { merchantId, chain: 'polygon', address: newAddress(), verifiedBy: 'operator' });
    const developer = await inMode(await signedInClient(app, (await addUserWithPassword(db.store, { merchantId, role: 'developer' })).email), true);
    const link = { amount: '10', currency: 'USDC', chain: 'base' };

    for (const address of [newAddress(), unverified.address, onOtherChain.address]) {
      const refused = await developer.post('/dashboard/links', { ...link, merchantWallet: address });
      expect(refused.status, address).toBe(403);
      expect(formError(refused.body)).toBe(
        `a live payment link may name only a verified receiving wallet of this merchant on base (${address} is not one); leave the wallet empty for the chain's default, or ask an owner to add and verify the wallet under Settings`,
      );
    }
    expect(await linksOf(merchantId)).toEqual([]);
    expect(await linkAudit(merchantId)).toEqual([]);

    // The verified wallet, written in lower case, and the default both pass.
    expect((await developer.post('/dashboard/links', { ...link, merchantWallet: verified.address.toLowerCase() })).status).toBe(303);
    expect((await developer.post('/dashboard/links', link)).status).toBe(303);
    expect(await linksOf(merchantId)).toEqual([
      { livemode: true, merchant_wallet: verified.address },
      { livemode: true, merchant_wallet: null },
    ]);
  });

  test('an owner may name any wallet; in test mode a developer may too (sandbox links move no money); every link’s audit entry names its wallet and webhook URL', async () => {
    const { merchantId, owner } = await newMerchantWithOwner(db.store);
    const ownerClient = await inMode(await signedInClient(app, owner.email), true);
    const anywhere = newAddress();
    const webhookUrl = 'https://1.1.1.1/hooks/links';
    expect((await ownerClient.post('/dashboard/links', { amount: '10', currency: 'USDC', chain: 'base', merchantWallet: anywhere, webhookUrl })).status).toBe(
      303,
    );
    const developer = await inMode(await signedInClient(app, (await addUserWithPassword(db.store, { merchantId, role: 'developer' })).email), false);
    const sandboxWallet = newAddress();
    expect((await developer.post('/dashboard/links', { amount: '2', currency: 'USDT', chain: 'polygon', merchantWallet: sandboxWallet })).status).toBe(303);
    expect((await developer.post('/dashboard/links', { amount: '3', currency: 'USDT', chain: 'polygon' })).status).toBe(303);

    const audit = await linkAudit(merchantId);
    expect(audit.map((entry) => [entry.livemode, entry.details])).toEqual([
      // As the API's entry, the pairs the customer may pay with (one here) are recorded too.
      [
        true,
        {
          amount: '10',
          currency: 'USDC',
          chain: 'base',
          paymentOptions: [BASE_USDC],
          merchantWallet: anywhere,
          webhookUrl,
          price: null,
          x402Discoverable: false,
        },
      ],
      [
        false,
        {
          amount: '2',
          currency: 'USDT',
          chain: 'polygon',
          paymentOptions: [POLYGON_USDT],
          merchantWallet: sandboxWallet,
          webhookUrl: null,
          price: null,
          x402Discoverable: false,
        },
      ],
      [
        false,
        {
          amount: '3',
          currency: 'USDT',
          chain: 'polygon',
          paymentOptions: [POLYGON_USDT],
          merchantWallet: null,
          webhookUrl: null,
          price: null,
          x402Discoverable: false,
        },
      ],
    ]);
  });
});
