// Ponder's side of bench/ponder.ts: the same polygon USDC Transfer logs into the same 100 wallets
// that svc gateway's ingester watches, from the block bench/ponder.ts passes. Everything comes
// from the environment that bench/ponder.ts sets.
import { createConfig } from 'ponder';
import { http, parseAbiItem } from 'viem';

const wallets = (process.env.BENCH_WALLETS ?? '').split(',') as `0x${string}`[];

export default createConfig({
  database: { kind: 'postgres', connectionString: process.env.DATABASE_URL! },
  networks: { polygon: { chainId: 137, transport: http(process.env.BENCH_RPC_URL!) } },
  contracts: {
    USDC: {
      network: 'polygon',
      abi: [parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 value)')],
      address: process.env.BENCH_TOKEN as `0x${string}`,
      startBlock: Number(process.env.BENCH_START_BLOCK ?? 0),
      filter: { event: 'Transfer', args: { to: wallets } },
    },
  },
});
