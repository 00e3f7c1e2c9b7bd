import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { AccountRole, generateKeyPairSigner, type Address, type Instruction, type KeyPairSigner } from '@solana/kit';
import { getCreateAccountInstruction } from '@solana-program/system';
import {
  TOKEN_PROGRAM_ADDRESS,
  getCreateAssociatedTokenIdempotentInstruction,
  getInitializeAccount3Instruction,
  getTransferCheckedInstruction,
  getTransferInstruction,
} from '@solana-program/token';
import { startSolanaRpc, type SolanaTestRpc } from '../../helpers/solanaRpc.ts';
import { parseTokenCredits, type RpcTransaction } from '../../../src/ingest/solana/parse.ts';

// parseTokenCredits on real transactions: each is run by the litesvm-backed test RPC (the real
// SPL token and ATA programs) and read back with getTransaction (encoding json,
// maxSupportedTransactionVersion 0) over JSON-RPC, as the ingester reads it.
let rpc: SolanaTestRpc;
let payer: KeyPairSigner;
let mints: Set<string>;
const tokenPrograms = new Set<string>([TOKEN_PROGRAM_ADDRESS]);

beforeAll(async () => {
  rpc = await startSolanaRpc();
  payer = await rpc.wallet();
  await rpc.fund(payer.address, 'USDC', 1_000_000_000n);
  mints = new Set([rpc.mints.USDC, rpc.mints.USDT]);
});

afterAll(async () => {
  await rpc?.stop();
});

async function getTransaction(signature: string): Promise<RpcTransaction> {
  const response = await fetch(rpc.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'getTransaction',
      params: [signature, { encoding: 'json', commitment: 'confirmed', maxSupportedTransactionVersion: 0 }],
    }),
  });
  const body = (await response.json()) as { result: RpcTransaction | null };
  expect(body.result).not.toBeNull();
  return body.result!;
}

const readonly = (keys: Address[]) => keys.map((key) => ({ address: key, role: AccountRole.READONLY }));

async function createAta(from: KeyPairSigner, owner: Address, extra: Address[] = []): Promise<Instruction> {
  const create = getCreateAssociatedTokenIdempotentInstruction({ payer: from, ata: await rpc.ata(owner, 'USDC'), owner, mint: rpc.mints.USDC });
  return { ...create, accounts: [...create.accounts, ...readonly(extra)] };
}

async function transferChecked(from: KeyPairSigner, to: Address, amount: bigint, extra: Address[] = []): Promise<Instruction> {
  const transfer = getTransferCheckedInstruction({
    source: await rpc.ata(from.address, 'USDC'),
    mint: rpc.mints.USDC,
    destination: await rpc.ata(to, 'USDC'),
    authority: from,
    amount,
    decimals: 6,
  });
  return { ...transfer, accounts: [...transfer.accounts, ...readonly(extra)] };
}

const newKey = async () => (await generateKeyPairSigner()).address;

async function poorPayer(): Promise<KeyPairSigner> {
  const poor = await rpc.wallet();
  await rpc.fund(poor.address, 'USDC', 1_000n);
  return poor;
}

describe('references: the transfer instruction first, else the other read-only keys of the transaction', () => {
  test('a reference on the createATA instruction; mint, owner, sysvar and programs next to it are not references', async () => {
    const owner = await newKey();
    const reference = await newKey();
    const entry = await rpc.send(payer, [
      await createAta(payer, owner, [reference, 'SysvarRent111111111111111111111111111111111' as Address, rpc.mints.USDT, TOKEN_PROGRAM_ADDRESS]),
      await transferChecked(payer, owner, 2_000_000n),
    ]);
    expect(entry.meta.err).toBeNull();
    const credits = parseTokenCredits(await getTransaction(entry.signature), { mints, tokenPrograms });
    expect(credits).toEqual([
      {
        signature: entry.signature,
        slot: entry.slot,
        blockTime: new Date(entry.blockTime * 1000),
        accountIndex: entry.accountKeys.indexOf(await rpc.ata(owner, 'USDC')),
        tokenAccount: await rpc.ata(owner, 'USDC'),
        mint: rpc.mints.USDC,
        owner,
        amount: 2_000_000n,
        from: payer.address,
        references: [reference],
        failed: false,
      },
    ]);
  });

  test('no reference anywhere: none (the owner of the created account, the mint and the programs are read-only keys too)', async () => {
    const owner = await newKey();
    const entry = await rpc.pay({ from: payer, to: owner, currency: 'USDC', amount: 1_000_000n });
    expect(parseTokenCredits(await getTransaction(entry.signature), { mints, tokenPrograms })[0]!.references).toEqual([]);
  });

  test("the transfer instruction's own references, when it has some, are the only ones", async () => {
    const owner = await newKey();
    const [onTransfer, onCreate] = [await newKey(), await newKey()];
    const entry = await rpc.send(payer, [await createAta(payer, owner, [onCreate]), await transferChecked(payer, owner, 1_500_000n, [onTransfer])]);
    expect(parseTokenCredits(await getTransaction(entry.signature), { mints, tokenPrograms })[0]!.references).toEqual([onTransfer]);
  });

  test('a v0 transaction: a reference loaded read-only from a lookup table counts', async () => {
    const owner = await newKey();
    const reference = await newKey();
    const table = await rpc.lookupTable([reference]);
    const entry = await rpc.send(payer, [await createAta(payer, owner, [reference]), await transferChecked(payer, owner, 1_000_000n)], 0, {
      [table]: [reference],
    });
    const transaction = await getTransaction(entry.signature);
    expect(transaction.meta!.loadedAddresses!.readonly).toEqual([reference]);
    expect(transaction.transaction.message.accountKeys).not.toContain(reference);
    expect(parseTokenCredits(transaction, { mints, tokenPrograms })[0]!.references).toEqual([reference]);
  });

  test("two transfers to two wallets: one transfer's reference is not a candidate for the other's credit", async () => {
    const [first, second, reference] = [await newKey(), await newKey(), await newKey()];
    const entry = await rpc.send(payer, [
      await createAta(payer, first),
      await createAta(payer, second),
      await transferChecked(payer, first, 1_000_000n, [reference]),
      await transferChecked(payer, second, 2_000_000n),
    ]);
    const credits = parseTokenCredits(await getTransaction(entry.signature), { mints, tokenPrograms });
    // Credits come in account-key order, which follows the random addresses: sort by amount.
    expect(credits.sort((a, b) => Number(a.amount - b.amount)).map((credit) => [credit.owner, credit.amount, credit.references])).toEqual([
      [first, 1_000_000n, [reference]],
      [second, 2_000_000n, []],
    ]);
  });

  test("two wallets, a reference on the first one's createATA: it is the first credit's, not a candidate for the second", async () => {
    const [first, second, reference] = [await newKey(), await newKey(), await newKey()];
    const entry = await rpc.send(payer, [
      await createAta(payer, first, [reference]),
      await createAta(payer, second),
      await transferChecked(payer, first, 1_000_000n),
      await transferChecked(payer, second, 2_000_000n),
    ]);
    const credits = parseTokenCredits(await getTransaction(entry.signature), { mints, tokenPrograms });
    expect(credits.sort((a, b) => Number(a.amount - b.amount)).map((credit) => [credit.owner, credit.amount, credit.references])).toEqual([
      [first, 1_000_000n, [reference]],
      [second, 2_000_000n, []],
    ]);
  });
});

describe('a failed transaction into a token account it was creating (no token balance entry)', () => {
  test('createATA + TransferChecked: the attempted credit, its mint from TransferChecked, its owner from the createATA', async () => {
    const owner = await newKey();
    const reference = await newKey();
    const poor = await poorPayer();
    const entry = await rpc.pay({ from: poor, to: owner, currency: 'USDC', amount: 2_000_000n, references: [reference] });
    const transaction = await getTransaction(entry.signature);
    expect(transaction.meta!.err).not.toBeNull();
    const ata = await rpc.ata(owner, 'USDC');
    const index = entry.accountKeys.indexOf(ata);
    expect(transaction.meta!.postTokenBalances!.map((balance) => Number(balance.accountIndex))).not.toContain(index);
    expect(parseTokenCredits(transaction, { mints, tokenPrograms })).toEqual([
      {
        signature: entry.signature,
        slot: entry.slot,
        blockTime: new Date(entry.blockTime * 1000),
        accountIndex: index,
        tokenAccount: ata,
        mint: rpc.mints.USDC,
        owner,
        amount: 2_000_000n,
        from: poor.address,
        references: [reference],
        failed: true,
      },
    ]);
    // Only for a watched account, and only for a watched mint.
    expect(parseTokenCredits(transaction, { mints, tokenPrograms, watched: (account) => account !== ata })).toEqual([]);
    expect(parseTokenCredits(transaction, { mints: new Set([rpc.mints.USDT]), tokenPrograms })).toEqual([]);
  });

  test('createATA + (unchecked) Transfer: the mint comes from the createATA instruction', async () => {
    const owner = await newKey();
    const poor = await poorPayer();
    const entry = await rpc.pay({ from: poor, to: owner, currency: 'USDC', amount: 3_000_000n, checked: false });
    const credits = parseTokenCredits(await getTransaction(entry.signature), { mints, tokenPrograms });
    expect(credits.map((credit) => [credit.tokenAccount, credit.mint, credit.owner, credit.amount, credit.failed])).toEqual([
      [await rpc.ata(owner, 'USDC'), rpc.mints.USDC, owner, 3_000_000n, true],
    ]);
  });

  test('createAccount + InitializeAccount3 + Transfer: the mint and owner come from the InitializeAccount3 instruction', async () => {
    const owner = await newKey();
    const poor = await poorPayer();
    const account = await generateKeyPairSigner();
    const space = 165n;
    const entry = await rpc.send(poor, [
      getCreateAccountInstruction({
        payer: poor,
        newAccount: account,
        lamports: rpc.ledger.svm.minimumBalanceForRentExemption(space),
        space,
        programAddress: TOKEN_PROGRAM_ADDRESS,
      }),
      getInitializeAccount3Instruction({ account: account.address, mint: rpc.mints.USDC, owner }),
      getTransferInstruction({ source: await rpc.ata(poor.address, 'USDC'), destination: account.address, authority: poor, amount: 4_000_000n }),
    ]);
    const credits = parseTokenCredits(await getTransaction(entry.signature), { mints, tokenPrograms });
    expect(entry.meta.err).not.toBeNull();
    expect(credits.map((credit) => [credit.tokenAccount, credit.mint, credit.owner, credit.amount, credit.failed])).toEqual([
      [account.address, rpc.mints.USDC, owner, 4_000_000n, true],
    ]);
  });

  test('a Transfer into an account that neither exists nor is created, of an unknown mint: nothing (the mint cannot be told)', async () => {
    const poor = await poorPayer();
    const nowhere = await newKey();
    const entry = await rpc.send(poor, [
      getTransferInstruction({ source: await rpc.ata(poor.address, 'USDC'), destination: nowhere, authority: poor, amount: 5_000_000n }),
    ]);
    expect(entry.meta.err).not.toBeNull();
    expect(parseTokenCredits(await getTransaction(entry.signature), { mints, tokenPrograms })).toEqual([]);
  });
});
