import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { Address } from 'viem';
import type { Anvil } from './anvil.ts';

const require = createRequire(import.meta.url);
const here = path.dirname(fileURLToPath(import.meta.url));

let runtime: `0x${string}` | undefined;

/** Compiles Eip3009Token.sol (FiatToken-compatible, "USD Coin" / "2") with solc-js, offline; once per process. */
export function eip3009TokenCode(): `0x${string}` {
  if (runtime) return runtime;
  const solc = require('solc');
  const input = {
    language: 'Solidity',
    sources: { 'Eip3009Token.sol': { content: fs.readFileSync(path.join(here, '../contracts/Eip3009Token.sol'), 'utf8') } },
    settings: { optimizer: { enabled: true, runs: 200 }, outputSelection: { '*': { '*': ['evm.deployedBytecode.object'] } } },
  };
  const findImports = (importPath: string) => {
    try {
      return { contents: fs.readFileSync(require.resolve(importPath), 'utf8') };
    } catch {
      return { error: `not found: ${importPath}` };
    }
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input), { import: findImports }));
  const errors = (output.errors ?? []).filter((error: { severity: string }) => error.severity === 'error');
  if (errors.length > 0) throw new Error(errors.map((error: { formattedMessage: string }) => error.formattedMessage).join('\n'));
  runtime = `0x${output.contracts['Eip3009Token.sol'].Eip3009Token.evm.deployedBytecode.object}`;
  return runtime;
}

const setDecimalsAbi = [{ type: 'function', name: 'setDecimals', stateMutability: 'nonpayable', inputs: [{ name: 'd', type: 'uint8' }], outputs: [] }] as const;

/**
 * Installs the EIP-3009 token at `address` (the real USDC address of the chain anvil plays) with
 * `decimals`; `anvil.mint` and `anvil.balanceOf` work on it as on the plain test token.
 */
export async function installEip3009Token(anvil: Anvil, address: Address, decimals: number): Promise<void> {
  await anvil.client.setCode({ address, bytecode: eip3009TokenCode() });
  const [account] = await anvil.client.getAddresses();
  const hash = await anvil.client.writeContract({
    account: account!,
    chain: anvil.client.chain,
    address,
    abi: setDecimalsAbi,
    functionName: 'setDecimals',
    args: [decimals],
  });
  await anvil.waitMined(hash);
}
