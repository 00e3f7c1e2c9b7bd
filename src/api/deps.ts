import type { Registry } from 'prom-client';
import type { Store } from '../store/index.ts';
import type { Logger } from '../internal/logger.ts';
import type { Config } from '../internal/config.ts';
import type { SecretBox } from '../internal/crypto.ts';
import type { RateLimits } from './rateLimits.ts';
import type { Sandbox } from '../sandbox/index.ts';
import type { X402 } from '../x402/index.ts';
import type { TransactionLookups } from '../ingest/lookup.ts';
import type { PricingDeps } from '../pricing/index.ts';

/** What route modules are given: real dependencies, passed in (tests pass their own). */
export interface ApiDeps {
  store: Store;
  logger: Logger;
  metrics: Registry;
  config: Config;
  /** Seals and opens webhook secrets. */
  box: SecretBox;
  startedAt: Date;
  /** Overrides of the spec's rate limits (requests per minute); unset keeps DEFAULT_RATE_LIMITS. */
  rateLimits?: Partial<RateLimits>;
  /** The sandbox's simulator, for `POST /sandbox/sessions/{id}/pay`; unset where the sandbox does not run. */
  sandbox?: Sandbox;
  /** x402 (session resources and the facilitator); unset: those routes answer 503. */
  x402?: X402;
  /** Chain lookups for payers' transaction proofs and refund completion; `createApi` makes them from `config.rpc` when not given. */
  lookups: TransactionLookups;
  /** Fiat prices (src/pricing): the same lookups, SVC_PEG_BAND_BPS and this API's short cache of feed readings. */
  pricing: PricingDeps;
}
