import { createRequire } from 'node:module';
import { pino, type Logger } from 'pino';
import type { LogFormat, LogLevel } from './config.ts';

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
  'solanaFeePayerKey',
  '*.solanaFeePayerKey',
  // The whole signed payment header a payer sends: a bearer instrument until it is settled.
  'req.headers["payment-signature"]',
  'req.headers["x-payment"]',
  'headers["payment-signature"]',
  'headers["x-payment"]',
];

type PrettyFactory = (options: Record<string, unknown>) => NodeJS.WritableStream;

/**
 * pino-pretty, loaded only when lines are to be pretty (a terminal, or SVC_LOG_FORMAT=pretty);
 * undefined when it is not installed (a production-only image may leave it out), in which case the
 * lines stay JSON.
 */
function loadPretty(): PrettyFactory | undefined {
  try {
    return createRequire(import.meta.url)('pino-pretty') as PrettyFactory;
  } catch {
    return undefined;
  }
}

/**
 * `format` unset means "pretty on a terminal, JSON otherwise": a person at `npm start` reads
 * lines, a log collector (the container, systemd, a pipe) gets one JSON object per line.
 */
export function resolveLogFormat(format: LogFormat | undefined, destination: NodeJS.WritableStream | undefined): LogFormat {
  if (format) return format;
  const stream = (destination ?? process.stdout) as NodeJS.WritableStream & { isTTY?: boolean };
  return stream.isTTY ? 'pretty' : 'json';
}

/**
 * Logs with snake_case fields; stages take child loggers (`logger.child({ stage: 'api' })`).
 * JSON lines, or readable lines through pino-pretty (see {@link resolveLogFormat}); the pretty
 * stream is synchronous, so the last line before exit is never lost. `destination` is for tests
 * that read the lines back, and for the CLI (stderr).
 */
export function createLogger(params: { level: LogLevel; destination?: NodeJS.WritableStream; format?: LogFormat }): Logger {
  const format = resolveLogFormat(params.format, params.destination);
  const pretty = format === 'pretty' ? loadPretty() : undefined;
  const target = (params.destination ?? process.stdout) as NodeJS.WritableStream & { isTTY?: boolean };
  const destination = pretty
    ? pretty({
        colorize: Boolean(target.isTTY),
        sync: true,
        destination: target,
        messageKey: 'msg',
        translateTime: 'SYS:HH:MM:ss.l',
        ignore: 'pid,hostname,service',
        singleLine: true,
      })
    : params.destination;
  const logger = createJsonLogger(params.level, destination);
  if (format === 'pretty' && !pretty) logger.warn({ msg: 'SVC_LOG_FORMAT=pretty needs the pino-pretty package (npm install); logging JSON' });
  return logger;
}

function createJsonLogger(level: LogLevel, destination: NodeJS.WritableStream | undefined): Logger {
  return pino(
    {
      level,
      base: { service: 'svc-gateway' },
      timestamp: pino.stdTimeFunctions.isoTime,
      messageKey: 'msg',
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      formatters: { level: (label) => ({ level: label }) },
    },
    destination as pino.DestinationStream | undefined,
  );
}
