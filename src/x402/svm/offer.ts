import type { ChainConfig, TokenConfig } from '../../internal/chains.ts';
import type { Session } from '../../payments/session.ts';

/**
 * What a Solana session offers over x402's `exact` scheme (coinbase/x402
 * `specs/schemes/exact/scheme_exact_svm.md`): a TransferChecked of the session's SPL token,
 * partially signed by the payer, with this gateway's fee payer (`extra.feePayer`) co-signing and
 * paying the fee.
 */

/** CAIP-2 of Solana mainnet (the genesis hash prefix), as @x402/svm names it. */
export const SOLANA_MAINNET = 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp';

/**
 * The longest window offered. A Solana transaction can land only while its recent blockhash is
 * valid (150 blocks, about 60 to 90 s), so the payer has to sign and send within about a minute
 * anyway; @x402/svm's own servers offer 60 s.
 */
export const SVM_MAX_TIMEOUT_SECONDS = 60;

/** The SVM offer of a session: its SPL token on solana, live sessions only. */
export interface SvmOffer {
  chain: 'solana';
  network: string;
  token: TokenConfig & { tokenProgram: string };
  /** The mint. */
  asset: string;
}

/** `PaymentRequirements` of the SVM exact scheme (spec §5.1.2 plus `extra.feePayer`). */
export interface SvmRequirements {
  scheme: 'exact';
  network: string;
  amount: string;
  asset: string;
  /** The merchant's wallet (the owner of the token account the transfer credits). */
  payTo: string;
  maxTimeoutSeconds: number;
  extra: { feePayer: string };
}

/**
 * The SVM offer of a session, or undefined: a live solana session with one of the chain's SPL
 * tokens. Sandbox sessions have none: the client reads the mint from the chain (`fetchMint`), and
 * the sandbox's fake mint exists on no Solana cluster, so no standard client could sign for it.
 */
export function svmOffer(session: Pick<Session, 'chain' | 'livemode' | 'tokenAddresses'>, chain: ChainConfig): SvmOffer | undefined {
  if (chain.kind !== 'solana' || session.chain !== 'solana' || !session.livemode) return undefined;
  const token = chain.tokens.find((candidate) => candidate.tokenProgram && session.tokenAddresses.includes(candidate.address));
  if (!token?.tokenProgram) return undefined;
  return { chain: 'solana', network: SOLANA_MAINNET, token: token as SvmOffer['token'], asset: token.address };
}

/** The requirements of paying `amount` base units of the offer's mint to `payTo`'s token account, the fee paid by `feePayer`. */
export function svmRequirements(offer: SvmOffer, params: { payTo: string; amount: bigint; secondsLeft: number; feePayer: string }): SvmRequirements {
  return {
    scheme: 'exact',
    network: offer.network,
    amount: params.amount.toString(),
    asset: offer.asset,
    payTo: params.payTo,
    maxTimeoutSeconds: Math.max(1, Math.min(SVM_MAX_TIMEOUT_SECONDS, Math.floor(params.secondsLeft))),
    extra: { feePayer: params.feePayer },
  };
}
