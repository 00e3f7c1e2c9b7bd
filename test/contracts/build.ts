/**
 * Compiles TestToken.sol with solc-js (offline, from npm) against @openzeppelin/contracts 4.x.
 * `npx tsx test/contracts/build.ts` rewrites TestToken.json; a test checks the committed
 * artifact still matches the source.
 */
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const here = path.dirname(fileURLToPath(import.meta.url));

export interface TokenArtifact {
  abi: unknown[];
  deployedBytecode: `0x${string}`;
  compiler: string;
}

export function compileTestToken(): TokenArtifact {
  const solc = require('solc');
  const input = {
    language: 'Solidity',
    sources: { 'TestToken.sol': { content: fs.readFileSync(path.join(here, 'TestToken.sol'), 'utf8') } },
    settings: { optimizer: { enabled: true, runs: 200 }, outputSelection: { '*': { '*': ['abi', 'evm.deployedBytecode.object'] } } },
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
  const contract = output.contracts['TestToken.sol'].TestToken;
  return { abi: contract.abi, deployedBytecode: `0x${contract.evm.deployedBytecode.object}`, compiler: solc.version() };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  fs.writeFileSync(path.join(here, 'TestToken.json'), `${JSON.stringify(compileTestToken(), null, 2)}\n`);
  console.log('wrote test/contracts/TestToken.json');
}
