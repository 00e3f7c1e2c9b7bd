/**
 * Deposit addresses benchmark (issue 25, docs/deposit-addresses.md): one section per figure, each
 * printed as a table. Sections so far:
 *
 * - `sweep-gas`: gas per payment of a sweep on anvil with the real contracts: deploy + flush of
 *   fresh deposit addresses (one USDC payment each) in batches of 1, 10 and 50 (`deployAndFlush`
 *   for one, `sweep` for more), then flush-only sweeps of the same, now deployed, addresses (a
 *   late second payment), and a native-coin flush.
 *
 * - `ingest`: the EVM ingester and the engine with 100,000 watched deposit addresses
 *   (bench/depositsIngest.ts, which also runs alone with its own flags).
 *
 * Add a section by adding an entry to SECTIONS (name, description, run → rows).
 *
 *   npx tsx bench/deposits.ts [--only sweep-gas|ingest] [--batches 1,10,50] [--addresses 100000]
 */
import { parseArgs } from 'node:util';
import { encodeFunctionData, getAddress, toHex, type Address, type Hex } from 'viem';
import { startAnvil, type Anvil } from '../test/helpers/anvil.ts';
import { deployFactoryOnAnvil, sendAs } from '../test/helpers/deposits.ts';
import { computeDepositAddress, DEPOSIT_FACTORY_ADDRESS, depositSalt } from '../src/internal/depositAddress.ts';
import { DEPOSIT_FACTORY_ABI } from '../src/deposits/calldata.ts';
import { NATIVE_TOKEN } from '../src/deposits/sweeps.ts';
import { benchDepositsIngest } from './depositsIngest.ts';

const { values } = parseArgs({
  options: { only: { type: 'string' }, batches: { type: 'string', default: '1,10,50' }, addresses: { type: 'string', default: '100000' } },
});
const batches = values.batches.split(',').map(Number);

type Row = Record<string, string | number | bigint>;
interface Section {
  name: string;
  description: string;
  run(): Promise<Row[]>;
}

const USDC: Address = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913';
const SWEEPER: Address = getAddress('0x0000000000000000000000000000000000005eed');

async function sweepGas(anvil: Anvil, deposits: { destination: Address; salt: Hex; tokens: Address[] }[]): Promise<bigint> {
  const data =
    deposits.length === 1
      ? encodeFunctionData({
          abi: DEPOSIT_FACTORY_ABI,
          functionName: 'deployAndFlush',
          args: [deposits[0]!.destination, deposits[0]!.salt, deposits[0]!.tokens],
        })
      : encodeFunctionData({ abi: DEPOSIT_FACTORY_ABI, functionName: 'sweep', args: [deposits] });
  const receipt = await anvil.waitMined(await sendAs(anvil, SWEEPER, DEPOSIT_FACTORY_ADDRESS, data));
  if (receipt.status !== 'success') throw new Error('sweep reverted');
  return receipt.gasUsed;
}

const SECTIONS: Section[] = [
  {
    name: 'sweep-gas',
    description: 'gas per payment of a sweep (anvil, base chain id, the real contracts; merchant wallets already hold USDC)',
    async run() {
      const anvil = await startAnvil({ chain: 'base' });
      try {
        await anvil.installToken(USDC, 6);
        await deployFactoryOnAnvil(anvil);
        const rows: Row[] = [];
        let n = 0;
        for (const size of batches) {
          const deposits: { destination: Address; salt: Hex; tokens: Address[]; address: Address }[] = [];
          for (let i = 0; i < size; i++) {
            const sessionId = `ses_bench_${++n}`;
            const destination = getAddress(toHex(0xbe000000 + n, { size: 20 }));
            // A merchant wallet that already holds USDC (the usual case): no fresh storage slot for the recipient.
            await anvil.waitMined(await anvil.mint(USDC, destination, 1n));
            const address = computeDepositAddress({ merchantWallet: destination, sessionId });
            await anvil.waitMined(await anvil.pay(USDC, address, 1_000_000n + BigInt(n)));
            deposits.push({ destination, salt: depositSalt(sessionId), tokens: [USDC], address });
          }
          const strip = () => deposits.map(({ address: _, ...rest }) => rest);
          const first = await sweepGas(anvil, strip());
          rows.push({ operation: 'deploy + flush USDC', batch: size, 'gas total': first, 'gas per payment': first / BigInt(size) });
          for (const deposit of deposits) await anvil.waitMined(await anvil.pay(USDC, deposit.address, 500_000n));
          const again = await sweepGas(anvil, strip());
          rows.push({ operation: 'flush USDC (deployed)', batch: size, 'gas total': again, 'gas per payment': again / BigInt(size) });
        }
        const native = { sessionId: `ses_bench_${++n}`, destination: getAddress(toHex(0xbe000000 + n, { size: 20 })) };
        const nativeAddress = computeDepositAddress({ merchantWallet: native.destination, sessionId: native.sessionId });
        await anvil.client.setBalance({ address: nativeAddress, value: 10n ** 16n });
        const gas = await sweepGas(anvil, [{ destination: native.destination, salt: depositSalt(native.sessionId), tokens: [NATIVE_TOKEN] }]);
        rows.push({ operation: 'deploy + flush native', batch: 1, 'gas total': gas, 'gas per payment': gas });
        return rows;
      } finally {
        await anvil.stop();
      }
    },
  },
  {
    name: 'ingest',
    description: 'ingest with watched deposit addresses (anvil, polygon chain id; 20,000 token transfers, 2,000 to deposit addresses)',
    async run() {
      const result = await benchDepositsIngest({ addresses: Number(values.addresses), transfers: 20_000, paying: 2_000, perTx: 1_000 });
      const flat = (prefix: string, value: unknown): [string, string | number][] =>
        value !== null && typeof value === 'object'
          ? Object.entries(value).flatMap(([key, inner]) => flat(prefix ? `${prefix}.${key}` : key, inner))
          : [[prefix, value as string | number]];
      return flat('', result).map(([figure, value]) => ({ figure, value }));
    },
  },
];

function table(rows: Row[]): string {
  if (rows.length === 0) return '(no rows)';
  const columns = Object.keys(rows[0]!);
  const widths = columns.map((column) => Math.max(column.length, ...rows.map((row) => String(row[column]).length)));
  const line = (cells: string[]) => `| ${cells.map((cell, i) => cell.padStart(widths[i]!)).join(' | ')} |`;
  return [line(columns), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map((row) => line(columns.map((c) => String(row[c]))))].join('\n');
}

for (const section of SECTIONS) {
  if (values.only && values.only !== section.name) continue;
  console.log(`\n## ${section.name}: ${section.description}\n`);
  console.log(table(await section.run()));
}
