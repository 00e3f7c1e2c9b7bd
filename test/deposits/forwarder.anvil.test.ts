import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import fc from 'fast-check';
import { encodeFunctionData, getAddress, parseEventLogs, toHex, type Address, type Hex } from 'viem';
import { startAnvil, type Anvil } from '../helpers/anvil.ts';
import { deployFactoryOnAnvil, factoryAbi, sendAs } from '../helpers/deposits.ts';
import { HOSTILE_MODE, installHostileToken } from '../helpers/hostileToken.ts';
import { computeDepositAddress, DEPOSIT_FACTORY_ADDRESS, DEPOSIT_FORWARDER_IMPLEMENTATION, depositSalt } from '../../src/internal/depositAddress.ts';
import { depositForwarderArtifact } from '../../src/internal/depositArtifacts.ts';
import { itemOutcomes, sweepItems } from '../../src/deposits/calldata.ts';
import { NATIVE_TOKEN } from '../../src/deposits/sweeps.ts';

/**
 * The deposit contracts on anvil (base, chain 8453), real bytecode, blocks mined explicitly: a
 * deposit address forwards to its merchant's wallet and nowhere else, whoever calls what, and
 * hostile tokens break neither that nor the sweep of other tokens.
 */
const USDC: Address = getAddress('0x833589fcd6edb6e08f4c7c32d4f71b54bda02913');
const MERCHANT: Address = getAddress('0x00000000000000000000000000000000000beef1');
const OTHER_MERCHANT: Address = getAddress('0x00000000000000000000000000000000000beef2');
const ATTACKER: Address = getAddress('0x000000000000000000000000000000000000bad1');
let anvil: Anvil;
let session = 0;

beforeAll(async () => {
  anvil = await startAnvil({ chain: 'base', automine: false });
  await anvil.installToken(USDC, 6);
  await deployFactoryOnAnvil(anvil);
});
afterAll(() => anvil?.stop());

/** A fresh session id and its deposit address for `wallet`. */
function newDeposit(wallet: Address = MERCHANT) {
  const sessionId = `ses_forwarder_${++session}`;
  return { sessionId, salt: depositSalt(sessionId), address: computeDepositAddress({ merchantWallet: wallet, sessionId }), wallet };
}

async function send(from: Address, to: Address, data: Hex, value = 0n) {
  return anvil.waitMined(await sendAs(anvil, from, to, data, value));
}

async function deployAndFlush(from: Address, wallet: Address, salt: Hex, tokens: Address[]) {
  return send(from, DEPOSIT_FACTORY_ADDRESS, encodeFunctionData({ abi: factoryAbi, functionName: 'deployAndFlush', args: [wallet, salt, tokens] }));
}

async function payNative(to: Address, value: bigint) {
  return send(getAddress('0x000000000000000000000000000000000000c0c0'), to, '0x', value);
}

describe('deposit forwarder', () => {
  test('payments of any amount from any account, before and after the address has code, reach exactly the merchant wallet, swept by a stranger', async () => {
    const deposit = newDeposit();
    const before = await anvil.balanceOf(USDC, MERCHANT);
    const amounts = [1n, 12_345_678n, 10n ** 15n];
    for (const [i, amount] of amounts.entries()) {
      const payer = getAddress(toHex(0xa11ce00 + i, { size: 20 }));
      await anvil.waitMined(await anvil.mint(USDC, payer, amount));
      await anvil.waitMined(await anvil.transfer(USDC, payer, deposit.address, amount));
    }
    await payNative(deposit.address, 5n * 10n ** 15n);
    const stranger: Address = getAddress('0x0000000000000000000000000000000000005742');
    const receipt = await deployAndFlush(stranger, MERCHANT, deposit.salt, [USDC, NATIVE_TOKEN]);
    expect(receipt.status).toBe('success');
    expect(await anvil.balanceOf(USDC, MERCHANT)).toBe(before + 12_345_679n + 10n ** 15n);
    expect(await anvil.balanceOf(USDC, deposit.address)).toBe(0n);
    expect(await anvil.balanceOf(USDC, stranger)).toBe(0n);
    expect(await anvil.client.getBalance({ address: deposit.address })).toBe(0n);
    expect(await anvil.client.getBalance({ address: MERCHANT })).toBe(5n * 10n ** 15n);

    // Deployed now: a later payment (tokens, and native coin by a plain transfer) is swept again, idempotently.
    await anvil.waitMined(await anvil.pay(USDC, deposit.address, 7n));
    expect((await payNative(deposit.address, 3n)).status).toBe('success');
    const again = await deployAndFlush(stranger, MERCHANT, deposit.salt, [USDC, NATIVE_TOKEN]);
    const events = parseEventLogs({ abi: factoryAbi, logs: again.logs });
    expect(events.map((event) => event.eventName)).toEqual(['Flushed', 'Flushed']);
    expect(await anvil.balanceOf(USDC, MERCHANT)).toBe(before + 12_345_686n + 10n ** 15n);
    expect(await anvil.client.getBalance({ address: MERCHANT })).toBe(5n * 10n ** 15n + 3n);
  });

  test('nobody can move a forwarder’s funds anywhere but its merchant’s wallet: crafted calls to the forwarder, the implementation and the factory', async () => {
    const deposit = newDeposit();
    await anvil.waitMined(await anvil.pay(USDC, deposit.address, 1_000_000n));
    await deployAndFlush(ATTACKER, MERCHANT, deposit.salt, []); // deployed, nothing flushed
    await anvil.waitMined(await anvil.pay(USDC, deposit.address, 2_000_000n));
    await payNative(deposit.address, 10n ** 15n);
    const usdcTotal = (await anvil.balanceOf(USDC, MERCHANT)) + (await anvil.balanceOf(USDC, deposit.address));
    const nativeTotal = (await anvil.client.getBalance({ address: MERCHANT })) + (await anvil.client.getBalance({ address: deposit.address }));

    // Another merchant's wallet with the same salt is another address: nothing of ours moves.
    const theirs = await deployAndFlush(ATTACKER, ATTACKER, deposit.salt, [USDC, NATIVE_TOKEN]);
    expect(theirs.status).toBe('success');
    expect(await anvil.balanceOf(USDC, deposit.address)).toBe(3_000_000n);
    // The implementation refuses to act for itself.
    const direct = await send(
      ATTACKER,
      DEPOSIT_FORWARDER_IMPLEMENTATION,
      encodeFunctionData({ abi: depositForwarderArtifact.abi, functionName: 'flush', args: [USDC] }),
    );
    expect(direct.status).toBe('reverted');

    const selectors = ['0x79c76e1a', '0xa9059cbb', '0x23b872dd', '0x095ea7b3', '0x66e7d741', '0xdabed0f8', '0x00000000'] as const;
    const targets = [deposit.address, DEPOSIT_FORWARDER_IMPLEMENTATION, DEPOSIT_FACTORY_ADDRESS] as const;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...targets),
        fc.constantFrom(...selectors),
        fc.array(fc.oneof(fc.constant(ATTACKER), fc.constant(USDC), fc.constant(deposit.address), fc.constant(NATIVE_TOKEN)), { maxLength: 3 }),
        fc.uint8Array({ maxLength: 96 }),
        async (target, selector, words, tail) => {
          const data = `${selector}${words.map((word) => word.slice(2).toLowerCase().padStart(64, '0')).join('')}${Buffer.from(tail).toString('hex')}` as Hex;
          await send(ATTACKER, target, data);
          expect(await anvil.balanceOf(USDC, ATTACKER)).toBe(0n);
          expect((await anvil.balanceOf(USDC, MERCHANT)) + (await anvil.balanceOf(USDC, deposit.address))).toBe(usdcTotal);
          expect((await anvil.client.getBalance({ address: MERCHANT })) + (await anvil.client.getBalance({ address: deposit.address }))).toBe(nativeTotal);
        },
      ),
      { numRuns: 40 },
    );
  });

  test('a token with no return value is swept; one returning false or reverting is reported failed, moves nothing, and the others still move', async () => {
    const deposit = newDeposit();
    const noReturn = await installHostileToken(anvil, getAddress('0x00000000000000000000000000000000000a0001'), HOSTILE_MODE.noReturn);
    const returnsFalse = await installHostileToken(anvil, getAddress('0x00000000000000000000000000000000000a0002'), HOSTILE_MODE.false);
    const reverts = await installHostileToken(anvil, getAddress('0x00000000000000000000000000000000000a0003'), HOSTILE_MODE.revert);
    for (const token of [noReturn, returnsFalse, reverts]) await token.mint(deposit.address, 500n);
    await anvil.waitMined(await anvil.pay(USDC, deposit.address, 4_000_000n));
    const usdcBefore = await anvil.balanceOf(USDC, MERCHANT);
    const tokens = [returnsFalse.address, reverts.address, noReturn.address, USDC];
    const receipt = await deployAndFlush(ATTACKER, MERCHANT, deposit.salt, tokens);
    expect(receipt.status).toBe('success');
    expect(await noReturn.balanceOf(MERCHANT)).toBe(500n);
    expect(await returnsFalse.balanceOf(deposit.address)).toBe(500n);
    expect(await reverts.balanceOf(deposit.address)).toBe(500n);
    expect(await anvil.balanceOf(USDC, MERCHANT)).toBe(usdcBefore + 4_000_000n);
    const outcomes = itemOutcomes(sweepItems([{ sessionId: deposit.sessionId, destination: MERCHANT, salt: deposit.salt, tokens }]), receipt.logs);
    expect(outcomes.map((o) => [o.outcome, o.amount])).toEqual([
      ['failed', null],
      ['failed', null],
      ['flushed', 500n],
      ['flushed', 4_000_000n],
    ]);
  });

  test('a token re-entering the factory and the forwarder during its transfer moves nothing anywhere else and nothing twice', async () => {
    const deposit = newDeposit();
    const other = newDeposit(OTHER_MERCHANT);
    const reentrant = await installHostileToken(anvil, getAddress('0x00000000000000000000000000000000000a0004'), HOSTILE_MODE.reenter);
    await reentrant.mint(deposit.address, 900n);
    await anvil.waitMined(await anvil.pay(USDC, deposit.address, 6_000_000n));
    await anvil.waitMined(await anvil.pay(USDC, other.address, 1_000_000n));
    const mine = await anvil.balanceOf(USDC, MERCHANT);
    const theirs = await anvil.balanceOf(USDC, OTHER_MERCHANT);
    // During its transfer the token sweeps our USDC and the other merchant's deposit through the factory.
    await reentrant.setReentry(
      DEPOSIT_FACTORY_ADDRESS,
      encodeFunctionData({
        abi: factoryAbi,
        functionName: 'sweep',
        args: [
          [
            { destination: MERCHANT, salt: deposit.salt, tokens: [USDC, reentrant.address] },
            { destination: OTHER_MERCHANT, salt: other.salt, tokens: [USDC] },
          ],
        ],
      }),
    );
    const tokens = [reentrant.address, USDC];
    const receipt = await deployAndFlush(ATTACKER, MERCHANT, deposit.salt, tokens);
    expect(receipt.status).toBe('success');
    expect(await reentrant.reentered()).toBe(true);
    expect(await anvil.balanceOf(USDC, MERCHANT)).toBe(mine + 6_000_000n);
    expect(await anvil.balanceOf(USDC, OTHER_MERCHANT)).toBe(theirs + 1_000_000n);
    expect(await reentrant.balanceOf(MERCHANT)).toBe(900n);
    expect(await anvil.balanceOf(USDC, ATTACKER)).toBe(0n);
    // The recorded amounts are what moved: the inner flush moved the USDC, the outer one found 0.
    const outcomes = itemOutcomes(sweepItems([{ sessionId: deposit.sessionId, destination: MERCHANT, salt: deposit.salt, tokens }]), receipt.logs);
    expect(outcomes.map((o) => o.amount)).toEqual([900n, 6_000_000n]);

    // The forwarder itself as the re-entry target: the same.
    const third = newDeposit();
    await reentrant.mint(third.address, 50n);
    await anvil.waitMined(await anvil.pay(USDC, third.address, 8n));
    await deployAndFlush(ATTACKER, MERCHANT, third.salt, []);
    await reentrant.setReentry(third.address, encodeFunctionData({ abi: depositForwarderArtifact.abi, functionName: 'flush', args: [USDC] }));
    expect((await deployAndFlush(ATTACKER, MERCHANT, third.salt, [reentrant.address])).status).toBe('success');
    expect(await anvil.balanceOf(USDC, MERCHANT)).toBe(mine + 6_000_008n);
    expect(await reentrant.balanceOf(MERCHANT)).toBe(950n);
  });

  test('a batch with one failing forwarder still sweeps the others', async () => {
    const good1 = newDeposit();
    const good2 = newDeposit(OTHER_MERCHANT);
    // A merchant wallet whose code refuses native coin: that forwarder's native flush fails.
    const refusing: Address = getAddress('0x00000000000000000000000000000000000bad22');
    await anvil.client.setCode({ address: refusing, bytecode: '0x60006000fd' });
    const bad = newDeposit(refusing);
    await anvil.waitMined(await anvil.pay(USDC, good1.address, 11n));
    await anvil.waitMined(await anvil.pay(USDC, good2.address, 22n));
    await payNative(bad.address, 33n);
    const before = [await anvil.balanceOf(USDC, MERCHANT), await anvil.balanceOf(USDC, OTHER_MERCHANT)];
    const deposits = [
      { sessionId: good1.sessionId, destination: MERCHANT, salt: good1.salt, tokens: [USDC] },
      { sessionId: bad.sessionId, destination: refusing, salt: bad.salt, tokens: [NATIVE_TOKEN] },
      { sessionId: good2.sessionId, destination: OTHER_MERCHANT, salt: good2.salt, tokens: [USDC] },
    ];
    const receipt = await send(
      ATTACKER,
      DEPOSIT_FACTORY_ADDRESS,
      encodeFunctionData({ abi: factoryAbi, functionName: 'sweep', args: [deposits.map(({ sessionId: _, ...rest }) => rest)] }),
    );
    expect(receipt.status).toBe('success');
    expect(await anvil.balanceOf(USDC, MERCHANT)).toBe(before[0]! + 11n);
    expect(await anvil.balanceOf(USDC, OTHER_MERCHANT)).toBe(before[1]! + 22n);
    expect(await anvil.client.getBalance({ address: bad.address })).toBe(33n);
    expect(itemOutcomes(sweepItems(deposits), receipt.logs).map((o) => o.outcome)).toEqual(['flushed', 'failed', 'flushed']);
  });
});
