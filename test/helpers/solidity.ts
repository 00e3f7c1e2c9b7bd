import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { Hex } from 'viem';

const require = createRequire(import.meta.url);
const contracts = path.join(path.dirname(fileURLToPath(import.meta.url)), '../contracts');
const compiled = new Map<string, Hex>();

/** The runtime bytecode of `contract` in test/contracts/`file`, compiled with solc-js (offline, from npm) once per process. */
export function testContractRuntime(file: string, contract: string): Hex {
  const key = `${file}:${contract}`;
  const cached = compiled.get(key);
  if (cached) return cached;
  const solc = require('solc');
  const input = {
    language: 'Solidity',
    sources: { [file]: { content: fs.readFileSync(path.join(contracts, file), 'utf8') } },
    settings: { optimizer: { enabled: true, runs: 200 }, outputSelection: { '*': { '*': ['evm.deployedBytecode.object'] } } },
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input)));
  const errors = (output.errors ?? []).filter((error: { severity: string }) => error.severity === 'error');
  if (errors.length > 0) throw new Error(errors.map((error: { formattedMessage: string }) => error.formattedMessage).join('\n'));
  const runtime: Hex = `0x${output.contracts[file][contract].evm.deployedBytecode.object}`;
  compiled.set(key, runtime);
  return runtime;
}
