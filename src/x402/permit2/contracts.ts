import { createRequire } from 'node:module';
import { concat, type Address, type Hex } from 'viem';

/**
 * The two contracts of x402's exact-EVM Permit2 route (coinbase/x402
 * `specs/schemes/exact/scheme_exact_evm.md`, "AssetTransferMethod: Permit2"): Uniswap's canonical
 * Permit2 and x402's `x402ExactPermit2Proxy`, each at its canonical address on every EVM chain
 * (CREATE2 through the deterministic deployment proxy). Their init code and salt are committed in
 * contracts/x402/*.json with where they come from; anyone can deploy them on a chain that lacks
 * them (docs/agents.md, "Permit2").
 */

/** Uniswap's Permit2: the payer approves it once per token; it checks the payer's signature. */
export const PERMIT2_ADDRESS: Address = '0x000000000022D473030F116dDEE9F6B43aC78BA3';
/**
 * x402's exact Permit2 proxy, the `spender` every @x402/evm client signs for: stateless, no owner,
 * no upgrade path; `settle` moves exactly `permit.permitted.amount` to `witness.to`, the address
 * the payer signed, whoever calls it.
 */
export const X402_EXACT_PERMIT2_PROXY: Address = '0x402085c248EeA27D92E8b30b2C58ed07f9E20001';

/** A committed deployment artifact (contracts/x402/<name>.json). */
export interface CanonicalDeployment {
  contractName: string;
  address: Address;
  deployer: Address;
  salt: Hex;
  initCode: Hex;
  source: string;
}

const require = createRequire(import.meta.url);
export const permit2Deployment = require('../../../contracts/x402/Permit2.json') as CanonicalDeployment;
export const proxyDeployment = require('../../../contracts/x402/x402ExactPermit2Proxy.json') as CanonicalDeployment;

/** The calldata that deploys `deployment` through the deterministic deployment proxy: salt, then init code. */
export function deployData(deployment: CanonicalDeployment): Hex {
  return concat([deployment.salt, deployment.initCode]);
}

/** The EIP-712 types @x402/evm signs for the Permit2 route (Permit2's PermitWitnessTransferFrom with x402's witness). */
export const PERMIT2_WITNESS_TYPES = {
  PermitWitnessTransferFrom: [
    { name: 'permitted', type: 'TokenPermissions' },
    { name: 'spender', type: 'address' },
    { name: 'nonce', type: 'uint256' },
    { name: 'deadline', type: 'uint256' },
    { name: 'witness', type: 'Witness' },
  ],
  TokenPermissions: [
    { name: 'token', type: 'address' },
    { name: 'amount', type: 'uint256' },
  ],
  Witness: [
    { name: 'to', type: 'address' },
    { name: 'validAfter', type: 'uint256' },
  ],
} as const;

const PERMIT = {
  name: 'permit',
  type: 'tuple',
  components: [
    {
      name: 'permitted',
      type: 'tuple',
      components: [
        { name: 'token', type: 'address' },
        { name: 'amount', type: 'uint256' },
      ],
    },
    { name: 'nonce', type: 'uint256' },
    { name: 'deadline', type: 'uint256' },
  ],
} as const;

/** What the relayer calls and reads: the proxy's `settle`, Permit2's nonce bitmap, ERC-20 allowance and balance. */
export const PERMIT2_ABI = [
  {
    type: 'function',
    name: 'settle',
    stateMutability: 'nonpayable',
    inputs: [
      PERMIT,
      { name: 'owner', type: 'address' },
      {
        name: 'witness',
        type: 'tuple',
        components: [
          { name: 'to', type: 'address' },
          { name: 'validAfter', type: 'uint256' },
        ],
      },
      { name: 'signature', type: 'bytes' },
    ],
    outputs: [],
  },
  {
    type: 'function',
    name: 'nonceBitmap',
    stateMutability: 'view',
    inputs: [
      { name: 'owner', type: 'address' },
      { name: 'wordPos', type: 'uint256' },
    ],
    outputs: [{ type: 'uint256' }],
  },
  {
    type: 'function',
    name: 'allowance',
    stateMutability: 'view',
    inputs: [
      { name: 'owner', type: 'address' },
      { name: 'spender', type: 'address' },
    ],
    outputs: [{ type: 'uint256' }],
  },
  {
    type: 'event',
    name: 'Transfer',
    inputs: [
      { name: 'from', type: 'address', indexed: true },
      { name: 'to', type: 'address', indexed: true },
      { name: 'value', type: 'uint256', indexed: false },
    ],
  },
] as const;
