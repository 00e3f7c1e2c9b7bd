import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { Address } from 'viem';
import type { Anvil } from './anvil.ts';

const require = createRequire(import.meta.url);
const here = path.dirname(fileURLToPath(import.meta.url));

/** Where the batch minter's code is installed on test chains. */
export const BATCH_MINTER: Address = '0x00000000000000000000000000000000000b47c4';

export const batchMinterAbi = [
  {
    type: 'function',
    name: 'mintMany',
    stateMutability: 'nonpayable',
    inputs: [
      { name: 'token', type: 'address' },
      { name: 'to', type: 'address[]' },
      { name: 'count', type: 'uint256' },
      { name: 'firstAmount', type: 'uint256' },
    ],
    outputs: [],
  },
] as const;

let runtime: `0x${string}` | undefined;

/** Compiles BatchMinter.sol with solc-js (offline, from npm); about a second, once per process. */
export function batchMinterCode(): `0x${string}` {
  if (runtime) return runtime;
  const solc = require('solc');
  const input = {
    language: 'Solidity',
    sources: { 'BatchMinter.sol': { content: fs.readFileSync(path.join(here, '../contracts/BatchMinter.sol'), 'utf8') } },
    settings: { optimizer: { enabled: true, runs: 200 }, outputSelection: { '*': { '*': ['evm.deployedBytecode.object'] } } },
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input)));
  const errors = (output.errors ?? []).filter((error: { severity: string }) => error.severity === 'error');
  if (errors.length > 0) throw new Error(errors.map((error: { formattedMessage: string }) => error.formattedMessage).join('\n'));
  runtime = `0x${output.contracts['BatchMinter.sol'].BatchMinter.evm.deployedBytecode.object}`;
  return runtime;
}

/**
 * Mints `count` transfers of `token` (amounts firstAmount, firstAmount+1, …) to `recipients` in
 * round robin, `perTx` per transaction, and returns the transaction hashes (mined).
 */
export async function mintMany(
  anvil: Anvil,
  params: { token: Address; recipients: Address[]; count: number; firstAmount: bigint; perTx?: number },
): Promise<number> {
  const code = await anvil.client.getCode({ address: BATCH_MINTER });
  if (!code || code === '0x') await anvil.client.setCode({ address: BATCH_MINTER, bytecode: batchMinterCode() });
  const [account] = await anvil.client.getAddresses();
  const perTx = params.perTx ?? 400;
  let sent = 0;
  let amount = params.firstAmount;
  const hashes: `0x${string}`[] = [];
  while (sent < params.count) {
    const n = Math.min(perTx, params.count - sent);
    hashes.push(
      await anvil.client.writeContract({
        account: account!,
        chain: anvil.client.chain,
        address: BATCH_MINTER,
        abi: batchMinterAbi,
        functionName: 'mintMany',
        args: [params.token, params.recipients, BigInt(n), amount],
        gas: BigInt(60_000 * n + 100_000),
      }),
    );
    sent += n;
    amount += BigInt(n);
  }
  for (const hash of hashes) await anvil.waitMined(hash);
  return hashes.length;
}
