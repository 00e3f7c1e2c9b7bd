import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { Abi, Address, Hex } from 'viem';
import type { Anvil } from './anvil.ts';

const require = createRequire(import.meta.url);
const here = path.dirname(fileURLToPath(import.meta.url));

/** HostileToken's transfer modes (test/contracts/HostileToken.sol). */
export const HOSTILE_MODE = { normal: 0, noReturn: 1, false: 2, revert: 3, reenter: 4 } as const;

let compiled: { abi: Abi; runtime: Hex } | undefined;

/** Compiles HostileToken.sol with solc-js, offline; once per process. */
export function hostileToken(): { abi: Abi; runtime: Hex } {
  if (compiled) return compiled;
  const solc = require('solc');
  const input = {
    language: 'Solidity',
    sources: { 'HostileToken.sol': { content: fs.readFileSync(path.join(here, '../contracts/HostileToken.sol'), 'utf8') } },
    settings: { optimizer: { enabled: true, runs: 200 }, outputSelection: { '*': { '*': ['abi', 'evm.deployedBytecode.object'] } } },
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input)));
  const errors = (output.errors ?? []).filter((error: { severity: string }) => error.severity === 'error');
  if (errors.length > 0) throw new Error(errors.map((error: { formattedMessage: string }) => error.formattedMessage).join('\n'));
  const contract = output.contracts['HostileToken.sol'].HostileToken;
  compiled = { abi: contract.abi, runtime: `0x${contract.evm.deployedBytecode.object}` };
  return compiled;
}

/** Installs a HostileToken at `address` in `mode`; returns helpers to mint, reconfigure and read it. */
export async function installHostileToken(anvil: Anvil, address: Address, mode: number) {
  const { abi, runtime } = hostileToken();
  await anvil.client.setCode({ address, bytecode: runtime });
  const [account] = await anvil.client.getAddresses();
  const write = async (functionName: string, args: unknown[]) => {
    const hash = await anvil.client.writeContract({ account: account!, chain: anvil.client.chain, address, abi, functionName, args } as never);
    await anvil.waitMined(hash);
  };
  await write('setMode', [mode]);
  return {
    address,
    mint: (to: Address, amount: bigint) => write('mint', [to, amount]),
    setMode: (m: number) => write('setMode', [m]),
    setReentry: (target: Address, data: Hex) => write('setReentry', [target, data]),
    balanceOf: (owner: Address) => anvil.client.readContract({ address, abi, functionName: 'balanceOf', args: [owner] }) as Promise<bigint>,
    reentered: () => anvil.client.readContract({ address, abi, functionName: 'reentered', args: [] }) as Promise<boolean>,
  };
}
