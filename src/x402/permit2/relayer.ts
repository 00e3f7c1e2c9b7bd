import {
  decodeFunctionData,
  encodeFunctionData,
  getAddress,
  isAddressEqual,
  keccak256,
  parseEventLogs,
  type Address,
  type Chain,
  type Hex,
  type PublicClient,
} from 'viem';
import type { PrivateKeyAccount } from 'viem/accounts';
import type { Eip3009Authorization } from '../wire.ts';
import { PERMIT2_ABI, PERMIT2_ADDRESS, X402_EXACT_PERMIT2_PROXY } from './contracts.ts';
import type { Permit2Fields } from './payload.ts';

/** How far back from a reverted relayer transaction's block to look for the one that used the permit first. */
const USED_BY_LOOKBACK_BLOCKS = 256n;

/**
 * The relayer's Permit2 calls, on the same gas-only key and RPC pool as its EIP-3009 ones
 * (relayer.ts). The key only calls x402's proxy, which moves the payer's tokens to the `witness.to`
 * the payer signed: it can spend gas and nothing else.
 */
export interface Permit2Calls {
  /** Whether Permit2 and x402's proxy both have code on this chain (the route works only then). */
  deployed(): Promise<boolean>;
  /** Whether `payer`'s Permit2 nonce (32-byte hex) is spent (Permit2's unordered nonce bitmap). */
  nonceUsed(payer: string, nonce: string): Promise<boolean>;
  /** `token.allowance(owner, Permit2)`: the payer's one-time approval. */
  allowance(token: string, owner: string): Promise<bigint>;
  /** Builds and signs `proxy.settle(...)` at the relayer's next nonce; gas estimation simulates it (a revert throws). */
  sign(authorization: Eip3009Authorization, permit2: Permit2Fields, signature: Hex): Promise<{ hash: Hex; raw: Hex }>;
  /** The mined call of the proxy's `settle` that spent `payer`'s `nonce`, found by its token transfer to `payTo`, up to `atBlock`. */
  usedBy(
    token: string,
    payer: string,
    nonce: string,
    payTo: string,
    atBlock: bigint,
  ): Promise<{ hash: Hex; transfers: { from: Address; to: Address; value: bigint }[] } | null>;
}

export function createPermit2Calls(params: { account: PrivateKeyAccount; chain: Chain; client: PublicClient }): Permit2Calls {
  const { account, chain, client } = params;
  let deployed = false;
  return {
    async deployed() {
      // Once seen, a CREATE2 deployment without selfdestruct stays: no need to ask again.
      if (deployed) return true;
      const [permit2, proxy] = await Promise.all([client.getCode({ address: PERMIT2_ADDRESS }), client.getCode({ address: X402_EXACT_PERMIT2_PROXY })]);
      deployed = Boolean(permit2 && permit2 !== '0x' && proxy && proxy !== '0x');
      return deployed;
    },
    async nonceUsed(payer, nonce) {
      const value = BigInt(nonce);
      const word = await client.readContract({
        address: PERMIT2_ADDRESS,
        abi: PERMIT2_ABI,
        functionName: 'nonceBitmap',
        args: [getAddress(payer), value >> 8n],
      });
      return ((word >> (value & 0xffn)) & 1n) === 1n;
    },
    allowance: (token, owner) =>
      client.readContract({ address: getAddress(token), abi: PERMIT2_ABI, functionName: 'allowance', args: [getAddress(owner), PERMIT2_ADDRESS] }),
    async sign(auth, permit2, signature) {
      const data = encodeFunctionData({ abi: PERMIT2_ABI, functionName: 'settle', args: settleArgs(auth, permit2, signature) });
      const request = await client.prepareTransactionRequest({ account, chain, to: X402_EXACT_PERMIT2_PROXY, data, nonceManager: undefined });
      const raw = await account.signTransaction(request as Parameters<typeof account.signTransaction>[0]);
      return { hash: keccak256(raw), raw };
    },
    async usedBy(token, payer, nonce, payTo, atBlock) {
      const address = getAddress(token);
      const logs = await client.getLogs({
        address,
        event: PERMIT2_ABI[3],
        args: { from: getAddress(payer), to: getAddress(payTo) },
        fromBlock: atBlock > USED_BY_LOOKBACK_BLOCKS ? atBlock - USED_BY_LOOKBACK_BLOCKS : 0n,
        toBlock: atBlock,
      });
      // Only a direct call of the proxy's settle with this owner and nonce counts: the permit is
      // then spent by that transaction, and the money went where the payer signed.
      for (const hash of new Set(logs.map((log) => log.transactionHash))) {
        const tx = await client.getTransaction({ hash });
        if (!tx.to || !isAddressEqual(tx.to, X402_EXACT_PERMIT2_PROXY)) continue;
        const call = (() => {
          try {
            return decodeFunctionData({ abi: PERMIT2_ABI, data: tx.input });
          } catch {
            return undefined;
          }
        })();
        if (call?.functionName !== 'settle') continue;
        const [permit, owner] = call.args;
        if (!isAddressEqual(owner, getAddress(payer)) || permit.nonce !== BigInt(nonce)) continue;
        const receipt = await client.getTransactionReceipt({ hash });
        if (receipt.status !== 'success') continue;
        const transfers = parseEventLogs({ abi: PERMIT2_ABI, eventName: 'Transfer', logs: receipt.logs })
          .filter((log) => isAddressEqual(log.address, address))
          .map((log) => ({ from: log.args.from, to: log.args.to, value: log.args.value }));
        return { hash, transfers };
      }
      return null;
    },
  };
}

/** The proxy's `settle` arguments from a payload: exactly what the payer signed. */
function settleArgs(auth: Eip3009Authorization, permit2: Permit2Fields, signature: Hex) {
  return [
    { permitted: { token: getAddress(permit2.token), amount: BigInt(auth.value) }, nonce: BigInt(permit2.nonce), deadline: BigInt(auth.validBefore) },
    getAddress(auth.from),
    { to: getAddress(auth.to), validAfter: BigInt(auth.validAfter) },
    signature,
  ] as const;
}

/** The proxy's and Permit2's revert reasons (custom errors by name or selector) as x402 reasons, or undefined for others. */
export function permit2RevertReason(text: string): { reason: string; message: string } | undefined {
  if (/InvalidNonce|756688fe/i.test(text)) return { reason: 'invalid_exact_evm_nonce_already_used', message: 'Permit2 says this permit nonce is already used' };
  if (/SignatureExpired|cd21db4f/i.test(text))
    return { reason: 'invalid_exact_evm_payload_authorization_valid_before', message: 'Permit2 says this permit expired' };
  if (/InvalidSigner|InvalidSignature|815e1d64|8baa579f|b0669cbc/i.test(text))
    return { reason: 'invalid_permit2_signature', message: 'Permit2 refused the signature' };
  if (/PaymentTooEarly/i.test(text)) return { reason: 'invalid_exact_evm_payload_authorization_valid_after', message: 'the permit is not valid yet' };
  if (/TRANSFER_FROM_FAILED/i.test(text))
    return { reason: 'permit2_allowance_required', message: "the token refused the transfer: the payer's balance or its Permit2 approval no longer covers it" };
  return undefined;
}
