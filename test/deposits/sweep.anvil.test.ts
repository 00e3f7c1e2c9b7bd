import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { getAddress, type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { useTestDatabase } from '../helpers/db.ts';
import { startAnvil, type Anvil } from '../helpers/anvil.ts';
import { deployFactoryOnAnvil, depositSenderOn, mineEvery } from '../helpers/deposits.ts';
import { newMerchant, newSession, usdc } from '../helpers/engine.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { RetryableError } from '../../src/internal/errors.ts';
import { computeDepositAddress, depositSalt } from '../../src/internal/depositAddress.ts';
import { recordSweep, recoverSweeps, sweepDeposits, type SweepContext } from '../../src/deposits/sweep.ts';
import { getSweep, NATIVE_TOKEN } from '../../src/deposits/sweeps.ts';
import type { DepositSender } from '../../src/deposits/sender.ts';

/**
 * Sweeping with the gateway's relayer key against real Postgres and anvil (base), blocks mined
 * explicitly: exact amounts recorded per session and token, exactly one transaction under a crash
 * between send and record, a dropped nonce, and a reorg that un-mines a sweep.
 */
const db = useTestDatabase('deposit_sweeps');
const USDC = getAddress(usdc('base'));
const relayerKey = generatePrivateKey();
const relayer = privateKeyToAccount(relayerKey).address;
let anvil: Anvil;
let sender: DepositSender;
let closeSender: () => Promise<void>;
let merchantId: string;
let wallet: Address;

const ctx = (): SweepContext => ({
  store: db.store,
  logger: createLogger({ level: 'silent' }),
  sender,
  livemode: true,
  confirmations: 3,
  pollMs: 50,
  waitMs: 20_000,
});

/** A live base session of the merchant, paid `amount` USDC at its deposit address. */
async function paidSession(amount: bigint) {
  const session = await newSession(db.store, { merchantId, wallet, amount: '1', chain: 'base' });
  const address = computeDepositAddress({ merchantWallet: wallet, sessionId: session.id });
  await anvil.waitMined(await anvil.pay(USDC, address, amount));
  return { sessionId: session.id, destination: wallet, salt: depositSalt(session.id), tokens: [USDC], address };
}

async function whileMining<T>(work: () => Promise<T>): Promise<T> {
  const miner = mineEvery(anvil);
  try {
    return await work();
  } finally {
    miner.stop();
  }
}

beforeAll(async () => {
  anvil = await startAnvil({ chain: 'base', automine: false });
  await anvil.installToken(USDC, 6);
  await deployFactoryOnAnvil(anvil);
  await anvil.client.setBalance({ address: relayer, value: 10n ** 18n });
  ({ sender, close: closeSender } = depositSenderOn(anvil, 'base', relayerKey));
  merchantId = await newMerchant(db.store);
  wallet = getAddress(`0x${'5e'.repeat(19)}01`);
});
afterAll(async () => {
  await closeSender?.();
  await anvil?.stop();
});

describe('deposit sweeps', () => {
  test('a batch across sessions moves each deposit to the merchant wallet and records each amount, the gas and the hash', async () => {
    const deposits = [await paidSession(1_000_001n), await paidSession(2_500_000n), await paidSession(3n)];
    const before = await anvil.balanceOf(USDC, wallet);
    const sweep = await whileMining(() => sweepDeposits(ctx(), deposits));
    expect(sweep.status).toBe('mined');
    expect(sweep.items.map((item) => [item.sessionId, item.depositAddress, item.outcome, item.amount])).toEqual(
      deposits.map((d, i) => [d.sessionId, d.address, 'flushed', [1_000_001n, 2_500_000n, 3n][i]]),
    );
    expect(sweep.gasUsed).toBeGreaterThan(0n);
    expect(sweep.sender).toBe(relayer.toLowerCase());
    expect(await anvil.balanceOf(USDC, wallet)).toBe(before + 3_500_004n);
    const receipt = await anvil.client.getTransactionReceipt({ hash: sweep.txHash as Hex });
    expect(receipt.from).toBe(relayer.toLowerCase());
    // Swept again: nothing moves, and it is recorded as 0.
    const again = await whileMining(() => sweepDeposits(ctx(), deposits.slice(0, 1)));
    expect(again.items.map((item) => item.amount)).toEqual([0n]);
  });

  test('a crash after recording and before broadcasting: recovery sends the recorded bytes, once', async () => {
    const deposit = await paidSession(4_000_000n);
    const before = await anvil.balanceOf(USDC, wallet);
    const nonce = await anvil.client.getTransactionCount({ address: relayer });
    const id = await recordSweep(ctx(), [deposit], { broadcast: false });
    // The process is gone here. Nothing reached the chain.
    await anvil.mine(2);
    expect(await anvil.client.getTransactionCount({ address: relayer })).toBe(nonce);
    const recorded = (await getSweep(db.store, id))!;
    expect(recorded.status).toBe('sent');
    // A new sweep refuses to sign while one is in flight, and recovery resolves it first.
    await expect(recordSweep(ctx(), [deposit], { broadcast: true })).rejects.toBeInstanceOf(RetryableError);
    const [resolved] = await whileMining(() => recoverSweeps(ctx()));
    expect(resolved).toMatchObject({ id, status: 'mined', txHash: recorded.txHash });
    expect(resolved!.items[0]).toMatchObject({ outcome: 'flushed', amount: 4_000_000n });
    expect(await anvil.client.getTransactionCount({ address: relayer })).toBe(nonce + 1);
    expect(await anvil.balanceOf(USDC, wallet)).toBe(before + 4_000_000n);
    expect(await recoverSweeps(ctx())).toEqual([]);
  });

  test('a crash after broadcasting and before the receipt is recorded: recovery records the mined transaction, sending nothing', async () => {
    const deposit = await paidSession(5_000_000n);
    const nonce = await anvil.client.getTransactionCount({ address: relayer });
    const id = await recordSweep(ctx(), [deposit], { broadcast: true });
    await anvil.mine(1);
    const [resolved] = await recoverSweeps(ctx());
    expect(resolved).toMatchObject({ id, status: 'mined' });
    expect(resolved!.items[0]!.amount).toBe(5_000_000n);
    expect(await anvil.client.getTransactionCount({ address: relayer })).toBe(nonce + 1);
  });

  test('a recorded sweep whose nonce another transaction took (an x402 settlement after a crash) is dropped; the next sweep moves the deposit', async () => {
    const deposit = await paidSession(6_000_000n);
    const id = await recordSweep(ctx(), [deposit], { broadcast: false });
    const other = await anvil.client.sendTransaction({ account: privateKeyToAccount(relayerKey), chain: anvil.client.chain, to: relayer, value: 0n });
    await anvil.waitMined(other);
    const [resolved] = await recoverSweeps(ctx());
    expect(resolved).toMatchObject({ id, status: 'dropped' });
    expect(resolved!.items[0]!.outcome).toBe('failed');
    expect(await anvil.balanceOf(USDC, deposit.address)).toBe(6_000_000n);
    const next = await whileMining(() => sweepDeposits(ctx(), [deposit]));
    expect(next.items[0]).toMatchObject({ outcome: 'flushed', amount: 6_000_000n });
  });

  test('a reorg that un-mines a sweep: it goes back to sent, is rebroadcast and recorded again', async () => {
    const deposit = await paidSession(7_000_000n);
    const sweep = await whileMining(() => sweepDeposits(ctx(), [deposit]));
    expect(sweep.status).toBe('mined');
    const head = await anvil.blockNumber();
    await anvil.reorg(Number(head - sweep.blockNumber! + 1n));
    expect(await anvil.balanceOf(USDC, deposit.address)).toBe(7_000_000n);
    const [again] = await whileMining(() => recoverSweeps(ctx()));
    expect(again).toMatchObject({ id: sweep.id, status: 'mined', txHash: sweep.txHash });
    expect(again!.blockHash).not.toBe(sweep.blockHash);
    expect(again!.items[0]!.amount).toBe(7_000_000n);
    expect(await anvil.balanceOf(USDC, deposit.address)).toBe(0n);
  });

  test('native coin and a token nobody configured are swept too', async () => {
    const deposit = await paidSession(1n);
    const wrongToken = getAddress(`0x${'77'.repeat(20)}`);
    await anvil.installToken(wrongToken, 9);
    await anvil.waitMined(await anvil.pay(wrongToken, deposit.address, 123_456_789n));
    await anvil.client.setBalance({ address: deposit.address, value: 42n });
    const sweep = await whileMining(() => sweepDeposits(ctx(), [{ ...deposit, tokens: [wrongToken, NATIVE_TOKEN] }]));
    // Items come by position, then token.
    expect(sweep.items.map((item) => [item.token, item.amount])).toEqual([
      [NATIVE_TOKEN, 42n],
      [wrongToken, 123_456_789n],
    ]);
    expect(await anvil.balanceOf(wrongToken, wallet)).toBe(123_456_789n);
    expect(await anvil.client.getBalance({ address: wallet })).toBe(42n);
  });
});
