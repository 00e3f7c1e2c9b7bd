import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { generateKeyPairSigner } from '@solana/kit';
import { TOKEN_PROGRAM_ADDRESS, getInitializeAccount3Instruction, getTransferCheckedInstruction } from '@solana-program/token';
import { getCreateAccountInstruction } from '@solana-program/system';
import { useTestDatabase } from '../../helpers/db.ts';
import { startSolanaRpc, type SolanaTestRpc } from '../../helpers/solanaRpc.ts';
import { chainHead, createSolanaMerchant, startIngester, transfersOf, waitFor } from '../../helpers/solanaIngest.ts';
import type { KeyPairSigner } from '@solana/kit';
import type { SolanaIngester } from '../../../src/ingest/solana/index.ts';

const db = useTestDatabase('solana_ingest');
let rpc: SolanaTestRpc;
let ingester: SolanaIngester;
let merchant: KeyPairSigner;
let payer: KeyPairSigner;
let changes: { kind: string }[];

beforeAll(async () => {
  rpc = await startSolanaRpc();
  ({ wallet: merchant } = await createSolanaMerchant(db.store, rpc));
  payer = await rpc.wallet();
  await rpc.fund(payer.address, 'USDC', 1_000_000_000n);
  await rpc.fund(payer.address, 'USDT', 1_000_000_000n);
  rpc.ledger.finalize();
  ({ ingester, changes } = startIngester({ store: db.store, rpc, websocket: true }));
  await ingester.start();
});

afterAll(async () => {
  await ingester?.stop();
  await rpc?.stop();
});

describe('solana ingest', () => {
  test('a TransferChecked carrying a Solana Pay reference is stored once, with the reference, and settles at finalized', async () => {
    const reference = (await generateKeyPairSigner()).address;
    const paid = await rpc.pay({ from: payer, to: merchant.address, currency: 'USDC', amount: 12_340_000n, references: [reference] });
    const [row] = await waitFor(
      async () => ((await transfersOf(db.store, paid.signature)).length > 0 ? transfersOf(db.store, paid.signature) : undefined),
      'the transfer',
    );
    const ata = await rpc.ata(merchant.address, 'USDC');
    expect(row).toEqual({
      tx_hash: paid.signature,
      log_index: paid.accountKeys.indexOf(ata),
      block_number: paid.slot,
      token_address: rpc.mints.USDC,
      from_address: payer.address,
      to_address: merchant.address,
      amount: '12340000',
      reference_keys: [reference],
      status: 'observed',
      session_id: null,
      match_method: null,
    });
    expect(changes.some((change) => change.kind === 'transfers')).toBe(true);
    const head = await waitFor(async () => {
      const current = await chainHead(db.store);
      return current && current.head_block !== null && current.head_block >= paid.slot ? current : undefined;
    }, 'the confirmed head');
    expect(head.finalized_block! < paid.slot).toBe(true);

    rpc.ledger.finalize();
    await waitFor(async () => ((await chainHead(db.store))?.finalized_block ?? 0n) >= paid.slot, 'the finalized slot');
    const { rows } = await db.store.query('SELECT commitment FROM solana_signatures WHERE signature = $1', [paid.signature]);
    expect(rows).toEqual([{ commitment: 'finalized' }]);
    const cursor = await waitFor(async () => {
      const { rows: accounts } = await db.store.query<{ cursor_signature: string | null }>(
        'SELECT cursor_signature FROM solana_token_accounts WHERE address = $1',
        [ata],
      );
      return accounts[0]?.cursor_signature === paid.signature ? accounts[0].cursor_signature : undefined;
    }, 'the cursor to reach the finalized signature');
    expect(cursor).toBe(paid.signature);
    expect(await transfersOf(db.store, paid.signature)).toHaveLength(1);
  });

  test('a plain Transfer in a legacy transaction without reference is stored with no reference keys', async () => {
    const paid = await rpc.pay({ from: payer, to: merchant.address, currency: 'USDT', amount: 5_000_001n, checked: false, version: 'legacy' });
    const [row] = await waitFor(
      async () => ((await transfersOf(db.store, paid.signature)).length > 0 ? transfersOf(db.store, paid.signature) : undefined),
      'the transfer',
    );
    expect(row).toMatchObject({
      token_address: rpc.mints.USDT,
      amount: '5000001',
      reference_keys: [],
      status: 'observed',
      to_address: merchant.address,
      from_address: payer.address,
    });
  });

  test('a failed transaction is recorded as failed with the amount it tried to move, and counts for nothing', async () => {
    const poor = await rpc.wallet();
    await rpc.fund(poor.address, 'USDC', 1_000_000n);
    const paid = await rpc.pay({ from: poor, to: merchant.address, currency: 'USDC', amount: 2_000_000n });
    expect(paid.meta.err).toEqual({ InstructionError: [1, { Custom: 1 }] });
    const [row] = await waitFor(
      async () => ((await transfersOf(db.store, paid.signature)).length > 0 ? transfersOf(db.store, paid.signature) : undefined),
      'the failed transfer',
    );
    expect(row).toMatchObject({ amount: '2000000', status: 'failed', to_address: merchant.address });
  });

  test('an outgoing transfer from the watched wallet stores no transfer but is remembered', async () => {
    const other = await rpc.wallet();
    const sent = await rpc.pay({ from: merchant, to: other.address, currency: 'USDC', amount: 1_000n });
    await waitFor(async () => (await db.store.query('SELECT 1 FROM solana_signatures WHERE signature = $1', [sent.signature])).rowCount === 1, 'the signature');
    expect(await transfersOf(db.store, sent.signature)).toEqual([]);
  });

  test('a transaction that vanishes before finalized has its transfer removed; once its slot is finalized', async () => {
    const paid = await rpc.pay({ from: payer, to: merchant.address, currency: 'USDC', amount: 7_000_000n });
    await waitFor(async () => ((await transfersOf(db.store, paid.signature)).length > 0 ? true : undefined), 'the transfer');
    rpc.ledger.drop(paid.signature);
    rpc.ledger.advance();
    rpc.ledger.finalize();
    const [row] = await waitFor(async () => {
      const rows = await transfersOf(db.store, paid.signature);
      return rows[0]?.status === 'removed' ? rows : undefined;
    }, 'the transfer to be removed');
    expect(row!.status).toBe('removed');
    expect(changes.some((change) => change.kind === 'reorg')).toBe(true);
  });
});

describe('solana ingest, forks', () => {
  test('a transaction still listed as confirmed once its slot is finalized (an unrooted fork) is removed, not settled', async () => {
    const paid = await rpc.pay({ from: payer, to: merchant.address, currency: 'USDC', amount: 8_000_000n });
    await waitFor(async () => ((await transfersOf(db.store, paid.signature)).length > 0 ? true : undefined), 'the transfer');
    rpc.ledger.orphan(paid.signature);
    rpc.ledger.advance();
    rpc.ledger.finalize();
    const [row] = await waitFor(async () => {
      const rows = await transfersOf(db.store, paid.signature);
      return rows[0]?.status === 'removed' ? rows : undefined;
    }, 'the transfer to be removed');
    expect(row!.status).toBe('removed');
    // The finalized slot the engine reads reaches it (only after the removal, in the same pass).
    await waitFor(async () => ((await chainHead(db.store))?.finalized_block ?? 0n) >= paid.slot, 'the finalized slot');
  });
});

describe('solana ingest, account lists', () => {
  test('a v0 transaction whose receiving account comes from an address lookup table: log_index counts the loaded keys', async () => {
    const ata = await rpc.ata(merchant.address, 'USDC');
    const table = await rpc.lookupTable([ata]);
    const source = await rpc.ata(payer.address, 'USDC');
    const transfer = getTransferCheckedInstruction({ source, mint: rpc.mints.USDC, destination: ata, authority: payer, amount: 4_200_000n, decimals: 6 });
    const paid = await rpc.send(payer, [transfer], 0, { [table]: [ata] });
    expect(paid.meta.err).toBeNull();
    expect((paid.meta.loadedAddresses as { writable: string[] }).writable).toEqual([ata]);
    const [row] = await waitFor(
      async () => ((await transfersOf(db.store, paid.signature)).length > 0 ? transfersOf(db.store, paid.signature) : undefined),
      'the transfer',
    );
    expect(row).toMatchObject({ amount: '4200000', to_address: merchant.address, log_index: paid.accountKeys.indexOf(ata) });
    // Loaded keys follow the static ones.
    expect(row!.log_index).toBe(paid.accountKeys.length - 1);
  });

  test('one transaction crediting two watched accounts (USDC and USDT) gives two transfers, one per token account', async () => {
    const instructions = [];
    for (const currency of ['USDC', 'USDT'] as const) {
      instructions.push(
        getTransferCheckedInstruction({
          source: await rpc.ata(payer.address, currency),
          mint: rpc.mints[currency],
          destination: await rpc.ata(merchant.address, currency),
          authority: payer,
          amount: 3_000_000n,
          decimals: 6,
        }),
      );
    }
    const paid = await rpc.send(payer, instructions);
    const rows = await waitFor(async () => {
      const found = await transfersOf(db.store, paid.signature);
      return found.length === 2 ? found : undefined;
    }, 'both transfers');
    const usdcAta = await rpc.ata(merchant.address, 'USDC');
    const usdtAta = await rpc.ata(merchant.address, 'USDT');
    const byMint = Object.fromEntries(rows.map((row) => [row.token_address, row]));
    expect(byMint[rpc.mints.USDC]).toMatchObject({ amount: '3000000', log_index: paid.accountKeys.indexOf(usdcAta) });
    expect(byMint[rpc.mints.USDT]).toMatchObject({ amount: '3000000', log_index: paid.accountKeys.indexOf(usdtAta) });
  });
});

describe('solana ingest, other token accounts', () => {
  test('a token account the wallet holds besides its associated one is discovered and watched', async () => {
    const account = await generateKeyPairSigner();
    const space = 165n;
    await rpc.send(payer, [
      getCreateAccountInstruction({
        payer,
        newAccount: account,
        lamports: rpc.ledger.svm.minimumBalanceForRentExemption(space),
        space,
        programAddress: TOKEN_PROGRAM_ADDRESS,
      }),
      getInitializeAccount3Instruction({ account: account.address, mint: rpc.mints.USDT, owner: merchant.address }),
    ]);
    await waitFor(
      async () => (await db.store.query('SELECT 1 FROM solana_token_accounts WHERE address = $1 AND NOT associated', [account.address])).rowCount === 1,
      'the account to be discovered',
    );
    const paid = await rpc.pay({ from: payer, to: merchant.address, currency: 'USDT', amount: 6_100_000n, toTokenAccount: account.address });
    const [row] = await waitFor(
      async () => ((await transfersOf(db.store, paid.signature)).length > 0 ? transfersOf(db.store, paid.signature) : undefined),
      'the transfer',
    );
    expect(row).toMatchObject({
      amount: '6100000',
      token_address: rpc.mints.USDT,
      to_address: merchant.address,
      log_index: paid.accountKeys.indexOf(account.address),
    });
  });
});
