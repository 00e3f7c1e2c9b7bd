import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { getAddress, type Address } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { startAnvil, type Anvil } from '../helpers/anvil.ts';
import { deployFactoryOnAnvil } from '../helpers/deposits.ts';
import { computeDepositAddress } from '../../src/internal/depositAddress.ts';

/**
 * The viem script docs/deposit-addresses.md gives merchants ("Sweeping without the gateway"),
 * taken from the page and run as it is against anvil: it finds the session's address from the
 * bytes alone and sweeps USDC and native coin into the wallet with nothing but a gas key.
 */
const root = path.resolve(import.meta.dirname, '../..');
const USDC = getAddress('0x833589fcd6edb6e08f4c7c32d4f71b54bda02913');
let anvil: Anvil;
const script = path.join(root, `.merchant-sweep-${process.pid}.ts`);

beforeAll(async () => {
  anvil = await startAnvil({ chain: 'base' });
  await anvil.installToken(USDC, 6);
  await deployFactoryOnAnvil(anvil);
  const page = fs.readFileSync(path.join(root, 'docs/deposit-addresses.md'), 'utf8');
  const section = page.slice(page.indexOf('## Sweeping without the gateway'));
  const code = /```ts\n([\s\S]*?)```/.exec(section)![1]!;
  fs.writeFileSync(script, code);
});
afterAll(async () => {
  fs.rmSync(script, { force: true });
  await anvil?.stop();
});

test('the documented script sweeps a session’s deposit address into the merchant wallet with any gas key', async () => {
  const wallet: Address = getAddress(`0x${'6a'.repeat(20)}`);
  const sessionId = 'ses_merchant_script';
  const deposit = computeDepositAddress({ merchantWallet: wallet, sessionId });
  await anvil.waitMined(await anvil.pay(USDC, deposit, 33_000_000n));
  await anvil.client.setBalance({ address: deposit, value: 7n });
  const key = generatePrivateKey();
  await anvil.client.setBalance({ address: privateKeyToAccount(key).address, value: 10n ** 18n });
  const env = {
    ...process.env,
    MERCHANT_WALLET: wallet,
    SESSION_ID: sessionId,
    RPC_URL: anvil.rpcUrl,
    GAS_KEY: key,
    TOKENS: `${USDC},0x0000000000000000000000000000000000000000`,
  };
  const child = spawn(process.execPath, ['--import', 'tsx', script], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk) => (out += chunk));
  child.stderr.on('data', (chunk) => (err += chunk));
  const code = await new Promise((resolve) => child.once('exit', resolve));
  expect(err).toBe('');
  expect(code).toBe(0);
  expect(out).toContain(`deposit address ${deposit}`);
  expect(out).toContain(`flushed ${USDC}: 33000000 base units`);
  expect(out).toContain('success in 0x');
  expect(await anvil.balanceOf(USDC, wallet)).toBe(33_000_000n);
  expect(await anvil.client.getBalance({ address: wallet })).toBe(7n);
});
