import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { parseTokenCredits, type RpcTransaction } from '../../../src/ingest/solana/parse.ts';
import { loadChains } from '../../../src/internal/chains.ts';

const chain = loadChains().solana;
const mints = new Set(chain.tokens.map((token) => token.address));
const tokenPrograms = new Set(chain.tokens.map((token) => token.tokenProgram!));
const USDC = 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v';
const USDT = 'Es9vMFrzaCERmJfrF4H2FYD4KCoNkY11McCe8BenwNYB';

function fixture(name: string): RpcTransaction {
  const file = path.resolve(import.meta.dirname, '../../fixtures/solana', name);
  return (JSON.parse(fs.readFileSync(file, 'utf8')) as { result: RpcTransaction }).result;
}

describe('parseTokenCredits on real mainnet responses', () => {
  test('a v0 swap with a lookup table: the credit is post minus pre of the receiving account; the pool debit is not a credit', () => {
    const credits = parseTokenCredits(fixture('mainnet-usdc-swap-credit-v0-alt.json'), { mints, tokenPrograms });
    expect(credits).toEqual([
      {
        signature: '2X4vKsDS56avumw6jh6Z5wj28GNvK5UkMfY1Ta2Mtouic886EGAraa1gsCJ5rkXyHCeL9p2wHRty3QHAhjf352Dp',
        slot: 343286989n,
        blockTime: new Date(1748539118 * 1000),
        accountIndex: 2,
        tokenAccount: 'F77xG4vz2CJeMxxAmFW8pvPx2c5Uk75pksr6Wwx6HFhV',
        mint: USDC,
        owner: '3xTPAZxmpwd8GrNEKApaTw6VH4jqJ31WFXUvQzgwhR7c',
        amount: 167225n,
        // The inner Transfer's source is the pool's USDC account, a key loaded from the table (index 13).
        from: 'Fn68NZzCCgZKtYmnAYbkL6w5NNx3TgjW91dGkLA3hsDK',
        // No transfer into the account carries a reference, so the candidates are the
        // transaction's read-only, non-signer keys that are no program, mint or token account (the
        // swap's pool and event accounts, static and loaded): they name no session, so matching
        // falls back to the amount.
        references: [
          '6YawcNeZ74tRyCv4UfGydYMr7eho7vbUR6ScVffxKAb3',
          'D8cy77BBepLMngZx6ZukaTff5hCt1HrWyKk3Hnd9oitf',
          'GZsNmWKbqhMYtdSkkvMdEyQF9k5mLmP7tTKYWZjcHVPE',
          'J4HJYz4p7TRP96WVFky3vh7XryxoFehHjoRySUTeSeXw',
        ],
        failed: false,
      },
    ]);
  });

  test('a TransferChecked into an account created in the same transaction (jsonParsed encoding)', () => {
    const credits = parseTokenCredits(fixture('mainnet-usdc-transfer-checked-new-ata-jsonparsed.json'), { mints, tokenPrograms });
    expect(credits).toHaveLength(1);
    expect(credits[0]).toMatchObject({
      accountIndex: 1,
      tokenAccount: '45hv5bBaXX9vK2zbdsZq526iHjhEPgsF3mascJDFoSuS',
      owner: 'CnBEqiUpz9iK45GTsfu3Ckgp9jnjpoCNrRjSPSdQbqGs',
      amount: 5_000_000n,
      from: '5FHwkrdxntdK24hgQU8qgBjn35Y1zwhz1GZwCkP2UJnM',
      failed: false,
    });
  });

  test("USDT: a v0 OpenBook settlement pays 8,430.155554 USDT by an inner Transfer; the signer's account, credited and debited in the same transaction, is no credit", () => {
    const credits = parseTokenCredits(fixture('mainnet-usdt-openbook-settle-v0.json'), { mints, tokenPrograms });
    // Two accounts end higher than they started: the USDT one of 6NUn… and the USDC one of Hwr7….
    expect(credits).toEqual([
      {
        signature: '3kxL8Qvp16kmVNiUkQSJ3zLvCJDK4qPZZ1ZL8W2VHeYoJUJnQ4VqMHFMNSmsGBq7rTfpe8cTzCopMSNRen6vGFt1',
        slot: 288918198n,
        blockTime: new Date(1725954458 * 1000),
        accountIndex: 4,
        tokenAccount: 'Cb6wY5fpawswXhSS5hqCE3xW3Qw2GjA7soxjLNnarvCd',
        mint: USDC,
        owner: 'Hwr7Av8kg5qJtMkAyiEmMkAiTWr6ZULmyE32hqmSSCSU',
        amount: 19_913_589_900n - 19_017_494_707n,
        from: 'Cs1CmcYgRorcAwhAeWp5BzqMbK92ea7bSTE8sZWtAXfx',
        references: [],
        failed: false,
      },
      {
        signature: '3kxL8Qvp16kmVNiUkQSJ3zLvCJDK4qPZZ1ZL8W2VHeYoJUJnQ4VqMHFMNSmsGBq7rTfpe8cTzCopMSNRen6vGFt1',
        slot: 288918198n,
        blockTime: new Date(1725954458 * 1000),
        accountIndex: 10,
        tokenAccount: '8uT1JEq9bxcXPNtgBJeXzQgDwojxkjxy1PC8uSEQuSBG',
        mint: USDT,
        owner: '6NUn63sRLS2oEHtAeaAMMMFTdmfPUX78McT47Hmt2t9i',
        amount: 8_430_155_554n,
        // The inner Transfer [5 -> 10] debits 458u…, whose owner signed the transaction.
        from: 'Cs1CmcYgRorcAwhAeWp5BzqMbK92ea7bSTE8sZWtAXfx',
        references: [],
        failed: false,
      },
    ]);
    // 458u… received 8,430,000,000 from the market (inner Transfer [3 -> 5]) and sent 8,430,155,554
    // on: its balance fell by 155,554, so watching it yields nothing, not the gross inbound transfer.
    const signerAccount = '458uFwc7urgyWwed7wRVLvY9h2eTxAKSeSA7M2f5hj5e';
    expect(
      parseTokenCredits(fixture('mainnet-usdt-openbook-settle-v0.json'), { mints, tokenPrograms, watched: (account) => account === signerAccount }),
    ).toEqual([]);
  });

  test('USDT only: watching the USDT mint alone drops the USDC credit of the same transaction', () => {
    const credits = parseTokenCredits(fixture('mainnet-usdt-openbook-settle-v0.json'), { mints: new Set([USDT]), tokenPrograms });
    expect(credits.map((credit) => [credit.tokenAccount, credit.amount])).toEqual([['8uT1JEq9bxcXPNtgBJeXzQgDwojxkjxy1PC8uSEQuSBG', 8_430_155_554n]]);
  });

  test('only watched token accounts are returned', () => {
    const transaction = fixture('mainnet-usdc-swap-credit-v0-alt.json');
    expect(parseTokenCredits(transaction, { mints, tokenPrograms, watched: (account) => account === 'someone-else' })).toEqual([]);
  });

  test('other mints are ignored (the same transaction without USDC in the watched set)', () => {
    expect(parseTokenCredits(fixture('mainnet-usdc-swap-credit-v0-alt.json'), { mints: new Set([USDT]), tokenPrograms })).toEqual([]);
  });

  test('a failed transaction yields its attempted credit, marked failed, from the instruction amount', () => {
    const transaction = fixture('mainnet-usdc-swap-credit-v0-alt.json');
    // The same transaction had it failed: the runtime reports meta.err and unchanged balances.
    const failed: RpcTransaction = {
      ...transaction,
      meta: { ...transaction.meta!, err: { InstructionError: [4, { Custom: 1 }] }, postTokenBalances: transaction.meta!.preTokenBalances },
    };
    const credits = parseTokenCredits(failed, { mints, tokenPrograms });
    // The inner Transfer [13 -> 2] carries 167225 base units ("3P5ssESYZrQP").
    expect(credits.map((credit) => [credit.tokenAccount, credit.amount, credit.failed])).toEqual([
      ['F77xG4vz2CJeMxxAmFW8pvPx2c5Uk75pksr6Wwx6HFhV', 167225n, true],
    ]);
  });
});
