import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { getAddress, type Address } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { useTestDatabase } from '../helpers/db.ts';
import { startAnvil, type Anvil } from '../helpers/anvil.ts';
import { newMerchant, newSession, usdc } from '../helpers/engine.ts';
import { main, type Io } from '../../src/cli/main.ts';
import { computeDepositAddress, DEPOSIT_FACTORY_ADDRESS } from '../../src/internal/depositAddress.ts';

/**
 * `svc deposits deploy-factory` and `svc deposits sweep` against a fresh anvil chain (polygon)
 * and real Postgres: the factory lands at the one address, twice is a no-op, and a base session
 * paid on polygon by mistake (USDC, native coin and an unconfigured token) is recovered there.
 */
const db = useTestDatabase('cli_deposits');
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-cli-deposits-'));
const relayerKey = generatePrivateKey();
let anvil: Anvil;
afterAll(async () => {
  await anvil?.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

beforeAll(async () => {
  anvil = await startAnvil({ chain: 'polygon' });
  await anvil.installChainTokens();
  await anvil.client.setBalance({ address: privateKeyToAccount(relayerKey).address, value: 10n ** 18n });
});

async function svc(...argv: string[]) {
  let out = '';
  let err = '';
  const io: Io = {
    env: {
      DATABASE_URL: db.connectionString,
      SVC_DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      SVC_POLYGON_RPC_URL: anvil.rpcUrl,
      SVC_POLYGON_RELAYER_KEY: relayerKey,
    },
    out: (text) => (out += text),
    err: (text) => (err += text),
  };
  const code = await main(argv, io);
  return { code, out, err };
}

test('deploy-factory puts the factory at its one address on a fresh chain, and again is a no-op', async () => {
  expect(await anvil.client.getCode({ address: DEPOSIT_FACTORY_ADDRESS })).toBeUndefined();
  const first = await svc('deposits', 'deploy-factory', '--chain', 'polygon', '--json');
  expect(first.err).toBe('');
  expect(JSON.parse(first.out)).toMatchObject({ chain: 'polygon', address: DEPOSIT_FACTORY_ADDRESS, deployed: true });
  expect(await anvil.client.getCode({ address: DEPOSIT_FACTORY_ADDRESS })).toBeTruthy();
  const second = await svc('deposits', 'deploy-factory', '--chain', 'polygon');
  expect(second).toMatchObject({ code: 0, out: `polygon: deposit factory already at ${DEPOSIT_FACTORY_ADDRESS}\n` });
  expect((await svc('deposits', 'deploy-factory', '--chain', 'solana')).code).toBe(2);
});

test('a base session paid on polygon by mistake (USDC, native coin, an unconfigured token) is swept to the merchant wallet there', async () => {
  const merchantId = await newMerchant(db.store);
  const wallet = getAddress(`0x${'4d'.repeat(20)}`) as Address;
  const session = await newSession(db.store, { merchantId, wallet, amount: '25', chain: 'base' });
  const deposit = computeDepositAddress({ merchantWallet: wallet, sessionId: session.id });
  const polygonUsdc = getAddress(usdc('polygon'));
  const stray = getAddress(`0x${'31'.repeat(20)}`);
  await anvil.installToken(stray, 18);
  await anvil.waitMined(await anvil.pay(polygonUsdc, deposit, 25_000_000n));
  await anvil.waitMined(await anvil.pay(stray, deposit, 10n ** 18n));
  await anvil.client.setBalance({ address: deposit, value: 10n ** 16n });

  const swept = await svc(
    'deposits',
    'sweep',
    '--chain',
    'polygon',
    '--session',
    session.id,
    '--token',
    'USDC',
    '--token',
    'native',
    '--token',
    stray,
    '--json',
  );
  expect(swept.err).toBe('');
  expect(swept.code).toBe(0);
  const sweep = JSON.parse(swept.out);
  expect(sweep).toMatchObject({ chain: 'polygon', status: 'mined' });
  expect(sweep.items.map((item: { amount: string }) => item.amount).sort()).toEqual(['10000000000000000', '1000000000000000000', '25000000']);
  expect(await anvil.balanceOf(polygonUsdc, wallet)).toBe(25_000_000n);
  expect(await anvil.balanceOf(stray, wallet)).toBe(10n ** 18n);
  expect(await anvil.client.getBalance({ address: wallet })).toBe(10n ** 16n);

  const nothing = await svc('deposits', 'sweep', '--chain', 'polygon', '--session', session.id);
  expect(nothing).toMatchObject({ code: 0, out: 'polygon: nothing to sweep (the deposit addresses hold none of those tokens)\n' });
  expect((await svc('deposits', 'sweep', '--chain', 'polygon')).code).toBe(2);
  expect((await svc('deposits', 'sweep', '--chain', 'polygon', '--session', 'ses_nope')).code).toBe(1);
});
