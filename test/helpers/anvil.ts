import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import fs from 'node:fs';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { createTestClient, http, publicActions, walletActions, defineChain, type Address, type Hash } from 'viem';
import { loadChains } from '../../src/internal/chains.ts';
import type { ChainName } from '../../src/internal/config.ts';

const require = createRequire(import.meta.url);
const here = path.dirname(fileURLToPath(import.meta.url));

/** The OpenZeppelin-based token whose runtime code is installed at real token addresses. */
export const testToken = JSON.parse(fs.readFileSync(path.join(here, '../contracts/TestToken.json'), 'utf8')) as {
  abi: readonly unknown[];
  deployedBytecode: `0x${string}`;
};

const tokenAbi = [
  { type: 'function', name: 'setDecimals', stateMutability: 'nonpayable', inputs: [{ name: 'd', type: 'uint8' }], outputs: [] },
  {
    type: 'function',
    name: 'mint',
    stateMutability: 'nonpayable',
    inputs: [
      { name: 'to', type: 'address' },
      { name: 'amount', type: 'uint256' },
    ],
    outputs: [],
  },
  {
    type: 'function',
    name: 'transfer',
    stateMutability: 'nonpayable',
    inputs: [
      { name: 'to', type: 'address' },
      { name: 'amount', type: 'uint256' },
    ],
    outputs: [{ type: 'bool' }],
  },
  { type: 'function', name: 'decimals', stateMutability: 'view', inputs: [], outputs: [{ type: 'uint8' }] },
  { type: 'function', name: 'balanceOf', stateMutability: 'view', inputs: [{ name: 'a', type: 'address' }], outputs: [{ type: 'uint256' }] },
] as const;

/** Production chain ids, so the production chain config runs unchanged against anvil. */
export const CHAIN_IDS = { polygon: 137, base: 8453, bsc: 56, arbitrum: 42161, optimism: 10 } as const;
export type EvmChainName = keyof typeof CHAIN_IDS;

/** Where the anvil binary ships inside the `@foundry-rs/anvil-*` npm package. */
export function anvilBinary(): string {
  const pkg = require.resolve('@foundry-rs/anvil-linux-amd64/package.json');
  return path.join(path.dirname(pkg), 'bin', 'anvil');
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/**
 * A free port below the kernel's ephemeral range (32768-60999 on Linux by default), for a server
 * that binds it seconds later (an embedded Postgres after initdb): a port {@link freePort} hands
 * out is an ephemeral one, which any outgoing connection may take in between (a daemon test's
 * Postgres found its port in use while chaos runs beside it made hundreds of connections).
 */
export async function serverPort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const free = await new Promise<boolean>((resolve) => {
      const server = net.createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (free) return port;
  }
}

/** A payer address with no key anywhere: anvil impersonates it. */
export const PAYER: Address = '0x000000000000000000000000000000000c0ffEE1'; // EIP-55 checksummed, as viem returns it

export type Anvil = Awaited<ReturnType<typeof startAnvil>>;

/**
 * Starts anvil from the npm package with the chain's production id. `automine: false` mines only
 * when a test calls `mine`, which reorg and confirmation tests need. Stop it with `stop()`.
 */
export async function startAnvil(params: { chain: EvmChainName; automine?: boolean; blockTime?: number }) {
  const chainId = CHAIN_IDS[params.chain];
  const port = await freePort();
  const args = ['--port', String(port), '--host', '127.0.0.1', '--chain-id', String(chainId), '--silent', '--accounts', '1'];
  if (params.automine === false) args.push('--no-mining');
  if (params.blockTime) args.push('--block-time', String(params.blockTime));
  const child: ChildProcess = spawn(anvilBinary(), args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (chunk) => (stderr += chunk));
  const rpcUrl = `http://127.0.0.1:${port}`;
  const chain = defineChain({
    id: chainId,
    name: `anvil-${params.chain}`,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
  const client = createTestClient({ chain, mode: 'anvil', transport: http(rpcUrl) })
    .extend(publicActions)
    .extend(walletActions);
  await waitForRpc(client, () => stderr, child);

  const chainConfig = loadChains()[params.chain as ChainName];

  async function impersonated<T>(from: Address, send: () => Promise<T>): Promise<T> {
    await client.impersonateAccount({ address: from });
    await client.setBalance({ address: from, value: 10n ** 20n });
    try {
      return await send();
    } finally {
      await client.stopImpersonatingAccount({ address: from });
    }
  }

  const anvil = {
    rpcUrl,
    chainId,
    client,
    process: child,
    /** Installs the test ERC-20 at `address` with `decimals`, as at that real token's address. */
    async installToken(address: Address, decimals: number): Promise<void> {
      await client.setCode({ address, bytecode: testToken.deployedBytecode });
      await impersonated(PAYER, async () => {
        const hash = await client.writeContract({ account: PAYER, chain, address, abi: tokenAbi, functionName: 'setDecimals', args: [decimals] });
        await anvil.waitMined(hash);
      });
    },
    /** Installs every token of `chains/<chain>.json` at its real address with its real decimals. */
    async installChainTokens(): Promise<void> {
      for (const token of chainConfig.tokens) await anvil.installToken(token.address as Address, token.decimals);
    },
    /** Mints `amount` base units of `token` to `to`. */
    async mint(token: Address, to: Address, amount: bigint): Promise<Hash> {
      return impersonated(PAYER, () =>
        client.writeContract({ account: PAYER, chain, address: token, abi: tokenAbi, functionName: 'mint', args: [to, amount] }),
      );
    },
    /** Sends `amount` base units of `token` from `from` (impersonated) to `to`; returns the tx hash. */
    async transfer(token: Address, from: Address, to: Address, amount: bigint): Promise<Hash> {
      return impersonated(from, () =>
        client.writeContract({ account: from, chain, address: token, abi: tokenAbi, functionName: 'transfer', args: [to, amount] }),
      );
    },
    /** Mints to the payer then transfers, the common "customer pays" step. */
    async pay(token: Address, to: Address, amount: bigint): Promise<Hash> {
      await anvil.waitMined(await anvil.mint(token, PAYER, amount));
      return anvil.transfer(token, PAYER, to, amount);
    },
    async balanceOf(token: Address, owner: Address): Promise<bigint> {
      return client.readContract({ address: token, abi: tokenAbi, functionName: 'balanceOf', args: [owner] });
    },
    /** With automine off, a sent transaction waits in the pool: mine one block for it. */
    async waitMined(hash: Hash) {
      if (params.automine === false) await client.mine({ blocks: 1 });
      return client.waitForTransactionReceipt({ hash, pollingInterval: 50 });
    },
    mine: (blocks = 1) => client.mine({ blocks }),
    snapshot: () => client.snapshot(),
    revert: (id: `0x${string}`) => client.revert({ id }),
    /**
     * Replaces the last `depth` blocks with new ones at the same heights (their transactions are
     * dropped) and returns once anvil shows the new branch, then keeps the chain's clock where it
     * was, as a real chain's next block would be. Returns the head it replaced up to and the hash
     * the lowest replaced block had.
     * - The first new block holds one marker transaction (a self-transfer of anvil's first dev
     *   account, whose key anvil holds, so no impersonation a rollback could drop):
     *   anvil can rebuild an empty block at its old timestamp with the same hash, so without it
     *   a reorg of empty blocks could change nothing, and nothing told whether it was applied.
     * - `anvil_reorg` may answer before its blocks are in place (a read right after it found the
     *   chain shorter or the block missing, 3-4 times in 300 in a probe). The reorg run took such
     *   a reorg for one that changed nothing and let payments go on; each reorg the ingester
     *   counted that the run had not made came right after one of those (issue 30: 4 in 150).
     * - `anvil_reorg` also winds anvil's clock back by the span of the replaced blocks, so after
     *   many reorgs new blocks were minutes behind the wall clock and every payment looked made
     *   before its session (the reorg run's unattributed transfers, issue 30).
     */
    async reorg(depth: number): Promise<{ head: bigint; replaced: Hash }> {
      const head = await client.getBlock({ blockTag: 'latest' });
      const lowest = head.number - BigInt(depth) + 1n;
      const replaced = (await client.getBlock({ blockNumber: lowest })).hash;
      const [marker] = await client.getAddresses();
      // Its nonce as of the common ancestor: left to anvil, it came from the replaced head's state,
      // which a marker of an earlier reorg in the replaced blocks had moved, and the reorg was not made.
      const nonce = await client.getTransactionCount({ address: marker!, blockNumber: lowest - 1n });
      // A value of its own: a marker like the one a replaced block already held, at the same
      // height and time, rebuilt that block unchanged. Gas given: left to anvil, the fee came from
      // the replaced head, not the block it goes in.
      const value = `0x${(1 + Math.floor(Math.random() * 2 ** 48)).toString(16)}`;
      const tx = {
        from: marker,
        to: marker,
        value,
        nonce: `0x${nonce.toString(16)}`,
        gas: '0x5208',
        maxFeePerGas: '0x174876e800',
        maxPriorityFeePerGas: '0x1',
      };
      await client.request({ method: 'anvil_reorg' as never, params: [depth, [[tx, 0]]] as never });
      for (const deadline = Date.now() + 10_000; ; ) {
        const [number, block] = await Promise.all([client.getBlockNumber({ cacheTime: 0 }), client.getBlock({ blockNumber: lowest }).catch(() => null)]);
        if (number >= head.number && block && block.hash !== replaced) break;
        if (Date.now() > deadline)
          throw new Error(
            `anvil_reorg(${depth}) at ${head.number} was not applied within 10 s: head ${number}, block ${lowest} ${block?.hash ?? 'missing'} (was ${replaced}) with ${block?.transactions.length ?? 0} transactions`,
          );
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      const now = BigInt(Math.floor(Date.now() / 1000));
      await client.request({ method: 'evm_setTime' as never, params: [Number(head.timestamp > now ? head.timestamp : now)] as never });
      return { head: head.number, replaced };
    },
    blockNumber: () => client.getBlockNumber({ cacheTime: 0 }),
    async stop(): Promise<void> {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
  return anvil;
}

async function waitForRpc(client: { getChainId(): Promise<number> }, stderr: () => string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`anvil exited with ${child.exitCode}: ${stderr()}`);
    try {
      await client.getChainId();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw new Error(`anvil did not answer within 15 s: ${stderr()}`, { cause: error });
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

export { tokenAbi };
