import { pino, type Logger } from 'pino';
import type { LogLevel } from './config.ts';

export type { Logger };

/**
 * Paths that may carry a key or a secret. pino replaces them before a line is written, so a
 * careless `log.info({ req })` cannot leak a credential.
 */
const REDACT_PATHS = [
  'authorization',
  'api_key',
  'secret',
  'password',
  'encryption_key',
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'headers.authorization',
  'headers["x-api-key"]',
  '*.secret',
  '*.api_key',
  '*.password',
  // x402 relayer keys (config.relayerKeys) are never logged, even if a config object is.
  'relayerKeys',
  '*.relayerKeys',
  // The whole signed payment header a payer sends: a bearer instrument until it is settled.
  'req.headers["payment-signature"]',
  'req.headers["x-payment"]',
  'headers["payment-signature"]',
  'headers["x-payment"]',
];

/**
 * JSON logs with snake_case fields; stages take child loggers (`logger.child({ stage: 'api' })`).
 * `destination` is for tests that read the lines back.
 */
export function createLogger(params: { level: LogLevel; destination?: NodeJS.WritableStream }): Logger {
  return pino(
    {
      level: params.level,
      base: { service: 'svc-gateway' },
      timestamp: pino.stdTimeFunctions.isoTime,
      messageKey: 'msg',
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      formatters: { level: (label) => ({ level: label }) },
    },
    params.destination as pino.DestinationStream | undefined,
  );
}
