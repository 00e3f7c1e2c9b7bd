import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { encodeFunctionData, type Address } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { useTestDatabase } from '../helpers/db.ts';
import type { Anvil } from '../helpers/anvil.ts';
import { startAnvilStack, type AnvilStack } from '../helpers/anvilStack.ts';
import { deployFactoryOnAnvil, factoryAbi, sendAs } from '../helpers/deposits.ts';
import { depositSalt } from '../../src/internal/depositAddress.ts';
import { eventsOf } from '../helpers/engine.ts';
import { waitFor } from '../helpers/waitFor.ts';

/**
 * Address mode end to end (issue 25): sessions through the real API, payments as ERC-20 transfers
 * on anvil to each session's CREATE2 deposit address (the real forwarder's, from the committed
 * artifacts), the real EVM ingester watching those addresses, the real engine matching by address.
 */
const db = useTestDatabase('engine_address_mode');
const chain = 'polygon' as const;
const USDC: Address = '0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359';
const DEPTH = 32;

let stack: AnvilStack;
let anvil: Anvil;
let call: AnvilStack['call'];
let merchant: AnvilStack['merchant'];
let wallet: AnvilStack['wallet'];

beforeAll(async () => {
  stack = await startAnvilStack({ store: db.store, connectionString: db.connectionString, chain });
  ({ anvil, call, merchant, wallet } = stack);
});

afterAll(async () => {
  await stack?.close();
});

interface Created {
  id: string;
  amountDue: string;
  amountDueBaseUnits: string;
  paymentAddress: Address;
  depositAddress: Address | null;
  merchantWallet: Address;
}

async function createSession(merchantWallet: Address, amount: string, attribution: 'amount' | 'address' = 'address'): Promise<Created> {
  const answer = await call('POST', '/api/v1/sessions', { key: merchant.live, body: { amount, currency: 'USDC', chain, merchantWallet, attribution } });
  expect(answer.status).toBe(201);
  return answer.body;
}

const session = async (id: string) => (await call('GET', `/api/v1/sessions/${id}`, { key: merchant.live })).body;

async function until(id: string, status: string, timeoutMs = 20_000) {
  await waitFor(async () => (await session(id)).status === status, `${id} to be ${status}`, timeoutMs);
  return session(id);
}

/** An arbitrary account (never seen by the gateway) sends `amount` to `to`. */
async function payFromStranger(to: Address, amount: bigint) {
  const stranger = privateKeyToAccount(generatePrivateKey()).address;
  await anvil.waitMined(await anvil.mint(USDC, stranger, amount));
  const hash = await anvil.transfer(USDC, stranger, to, amount);
  await anvil.waitMined(hash);
  return hash;
}

const confirm = () => anvil.mine(DEPTH);

describe('address mode on anvil: every transfer to a session’s deposit address is that session’s', () => {
  test('any amount from an arbitrary account confirms the session; its address is its own, its wallet where the money ends', async () => {
    const to = await wallet();
    const s = await createSession(to, '25');
    expect(s).toMatchObject({ amountDue: '25', amountDueBaseUnits: '25000000', merchantWallet: to, attribution: 'address' });
    expect(s.paymentAddress).toBe(s.depositAddress);
    expect(s.depositAddress).not.toBe(to);
    // An odd amount, as an exchange withdrawal after fees might send: over the price, so it confirms.
    const hash = await payFromStranger(s.depositAddress!, 25_123_457n);
    expect(await until(s.id, 'confirming')).toMatchObject({ txHash: hash, amountPending: '25.123457' });
    await confirm();
    expect(await until(s.id, 'confirmed')).toMatchObject({ amountReceived: '25.123457' });
    expect(await eventsOf(db.store, s.id)).toEqual(['payment.confirming', 'payment.confirmed', 'payment.overpaid']);
    const { rows } = await db.store.query(`SELECT match_method FROM transfers WHERE session_id = $1`, [s.id]);
    expect(rows.map((row) => row.match_method)).toEqual(['address']);
    const { rows: events } = await db.store.query(`SELECT payload FROM events WHERE session_id = $1 AND type = 'payment.confirmed'`, [s.id]);
    expect(events[0]!.payload.data).toMatchObject({ paymentAddress: s.depositAddress, depositAddress: s.depositAddress, merchantWallet: to });
  });

  test('two sessions of the same price paid in the same block are each credited exactly', async () => {
    const to = await wallet();
    const a = await createSession(to, '40');
    const b = await createSession(to, '40');
    // No unique offsets: both ask for the plain amount; their addresses tell them apart.
    expect([a.amountDue, b.amountDue]).toEqual(['40', '40']);
    await anvil.client.setAutomine(false);
    try {
      await anvil.mint(USDC, a.depositAddress!, 40_000_000n);
      await anvil.mint(USDC, b.depositAddress!, 39_000_000n);
      await anvil.mine(1);
    } finally {
      await anvil.client.setAutomine(true);
    }
    await confirm();
    expect(await until(a.id, 'confirmed')).toMatchObject({ amountReceived: '40' });
    expect(await until(b.id, 'pending')).toMatchObject({ amountReceived: '39' });
    const { rows } = await db.store.query(`SELECT session_id, amount::text, block_number FROM transfers WHERE session_id = ANY($1) ORDER BY session_id`, [
      [a.id, b.id],
    ]);
    expect(rows).toHaveLength(2);
    expect(rows[0]!.block_number).toBe(rows[1]!.block_number);
  });

  test('under, then several transfers; late after expiry inside the window', async () => {
    const to = await wallet();
    const s = await createSession(to, '30');
    await payFromStranger(s.depositAddress!, 10_000_000n);
    await confirm();
    expect(await until(s.id, 'pending')).toMatchObject({ amountReceived: '10' });
    await payFromStranger(s.depositAddress!, 7_000_000n);
    await payFromStranger(s.depositAddress!, 13_000_000n);
    await confirm();
    expect(await until(s.id, 'confirmed')).toMatchObject({ amountReceived: '30' });
    expect(await eventsOf(db.store, s.id)).toEqual(['payment.confirming', 'payment.underpaid', 'payment.confirming', 'payment.confirmed']);

    const late = await createSession(to, '12');
    // Expired before the chain's latest block (and the database's clock): the late payment's block,
    // newer than that one, is after the expiry whatever the two clocks say.
    const { timestamp } = await anvil.client.getBlock({ blockTag: 'latest' });
    await db.store.query(`UPDATE payment_sessions SET expires_at = least(now(), to_timestamp($2)) - interval '1 second' WHERE id = $1`, [
      late.id,
      Number(timestamp),
    ]);
    await until(late.id, 'expired');
    await payFromStranger(late.depositAddress!, 12_000_000n);
    await confirm();
    await until(late.id, 'confirmed');
    expect(await eventsOf(db.store, late.id)).toEqual(['payment.expired', 'payment.confirming', 'payment.late_confirmed']);
  });

  test('a reorg of a deposit keeps the balance exact: removed, then paid again', async () => {
    const to = await wallet();
    const s = await createSession(to, '70');
    await payFromStranger(s.depositAddress!, 70_000_000n);
    await until(s.id, 'confirming');
    await anvil.reorg(3);
    await anvil.mine(1);
    expect(await until(s.id, 'created')).toMatchObject({ amountReceived: '0', amountPending: '0', txHash: null });
    await payFromStranger(s.depositAddress!, 70_000_000n);
    await confirm();
    expect(await until(s.id, 'confirmed')).toMatchObject({ amountReceived: '70' });
    expect(await eventsOf(db.store, s.id)).toEqual(['payment.confirming', 'payment.reorged', 'payment.confirming', 'payment.confirmed']);
  });

  test('a sweep into the merchant wallet pays nothing: not an amount-mode session of that price on the wallet, not the unmatched list', async () => {
    const to = await wallet();
    const deposit = await createSession(to, '55');
    await payFromStranger(deposit.depositAddress!, 55_000_000n);
    await confirm();
    await until(deposit.id, 'confirmed');
    // An amount-mode session on the same wallet asks for exactly what the sweep will move.
    const byAmount = await createSession(to, '55', 'amount');
    expect(byAmount.amountDue).toBe('55');
    await deployFactoryOnAnvil(anvil);
    const sweep = await sendAs(
      anvil,
      privateKeyToAccount(generatePrivateKey()).address,
      (await import('../../src/internal/depositAddress.ts')).DEPOSIT_FACTORY_ADDRESS,
      encodeFunctionData({ abi: factoryAbi, functionName: 'deployAndFlush', args: [to, depositSalt(deposit.id), [USDC]] }),
    );
    expect((await anvil.waitMined(sweep)).status).toBe('success');
    expect(await anvil.balanceOf(USDC, to)).toBe(55_000_000n);
    await confirm();
    await waitFor(
      async () => (await db.store.query(`SELECT 1 FROM transfers WHERE tx_hash = $1 AND match_method = 'sweep'`, [sweep])).rowCount === 1,
      'the sweep to be decided',
    );
    expect(await session(byAmount.id)).toMatchObject({ status: 'created', amountReceived: '0' });
    expect(await session(deposit.id)).toMatchObject({ status: 'confirmed', amountReceived: '55' });
    const unmatched = (await call('GET', '/api/v1/transfers/unmatched', { key: merchant.live })).body.data as { txHash: string }[];
    expect(unmatched.some((t) => t.txHash === sweep)).toBe(false);
  });
});
