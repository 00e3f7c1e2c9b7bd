import type { Config } from '../internal/config.ts';
import { loadConfig } from '../internal/config.ts';
import type { Logger } from '../internal/logger.ts';
import { createSecretBox, loadOrCreateEncryptionKey } from '../internal/crypto.ts';
import type { Store } from '../store/index.ts';
import { getMerchant } from '../accounts/index.ts';
import { DEFAULT_ROTATION_OVERLAP_SECONDS, MAX_ROTATION_OVERLAP_SECONDS, rotateEndpointSecret, rotateMerchantSecret } from '../delivery/index.ts';
import { listenForWebhooks } from './webhooksListen.ts';
import type { Command, Io } from './main.ts';

/** What main.ts lends the webhook commands (passed in, so this module does not import it at run time). */
export interface CliHelpers {
  UsageError: new (message: string) => Error;
  jsonOption: Command['options'];
  emit(io: Io, json: boolean, data: unknown, human: string): void;
  withStore<T>(io: Io, work: (store: Store, ctx: { config: Config; logger: Logger }) => Promise<T>): Promise<T>;
  requireString(values: Record<string, unknown>, name: string): string;
  waitForSignal(): Promise<string>;
}

/** `svc webhooks listen` and `svc webhooks rotate-secret`. */
export function webhookCommands(h: CliHelpers): Record<string, Command> {
  return {
    'webhooks listen': {
      summary: 'receive, verify and print webhook events locally (registers a temporary endpoint)',
      usage: 'svc webhooks listen --key API_KEY [--port 4242] [--api URL] [--events payment.confirmed,…] [--json]',
      options: {
        key: { type: 'string', description: 'an API key with write scope; a test key listens to sandbox events (env SVC_API_KEY)' },
        port: { type: 'string', description: 'local port to receive on (default 4242; 0 picks one)' },
        api: { type: 'string', description: 'the daemon’s base URL (default SVC_PUBLIC_URL, i.e. http://HOST:PORT)' },
        events: { type: 'string', description: 'comma-separated event kinds (default all)' },
        ...h.jsonOption,
      },
      async run({ values, io, json }) {
        const apiKey = typeof values.key === 'string' ? values.key : io.env.SVC_API_KEY;
        if (!apiKey) throw new h.UsageError('--key is required (or set SVC_API_KEY)');
        const port = typeof values.port === 'string' ? Number(values.port) : 4242;
        if (!Number.isInteger(port) || port < 0 || port > 65535) throw new h.UsageError('--port must be a port number');
        const apiUrl = typeof values.api === 'string' ? values.api.replace(/\/+$/, '') : loadConfig(io.env).publicUrl;
        await listenForWebhooks({
          apiUrl,
          apiKey,
          port,
          ...(typeof values.events === 'string' ? { events: values.events.split(',').map((event) => event.trim()) } : {}),
          print: (line, data) => h.emit(io, json, data, line),
          stop: io.stopSignal ?? h.waitForSignal(),
        });
        return 0;
      },
    },

    'webhooks rotate-secret': {
      summary: 'rotate a webhook signing secret (a merchant’s, per mode, or an endpoint’s); prints the new one once',
      usage: 'svc webhooks rotate-secret --merchant ID --mode test|live [--endpoint we_…] [--expires-in SECONDS] [--json]',
      options: {
        merchant: { type: 'string', description: 'merchant id (mer_…)' },
        mode: { type: 'string', description: 'test (the sandbox secret) or live; session webhookUrls of each mode have their own secret' },
        endpoint: { type: 'string', description: 'a registered endpoint (we_…) of that mode: rotate its secret instead of the merchant’s' },
        'expires-in': {
          type: 'string',
          description: `seconds the old secret keeps signing beside the new one, 0 to ${MAX_ROTATION_OVERLAP_SECONDS} (default ${DEFAULT_ROTATION_OVERLAP_SECONDS}); 0 stops it now`,
        },
        ...h.jsonOption,
      },
      async run({ values, io, json }) {
        const merchantId = h.requireString(values, 'merchant');
        const mode = h.requireString(values, 'mode');
        if (mode !== 'test' && mode !== 'live') throw new h.UsageError('--mode must be test or live');
        const raw = values['expires-in'];
        if (raw !== undefined && !(typeof raw === 'string' && /^\d{1,6}$/.test(raw) && Number(raw) <= MAX_ROTATION_OVERLAP_SECONDS)) {
          throw new h.UsageError(`--expires-in must be a whole number of seconds from 0 to ${MAX_ROTATION_OVERLAP_SECONDS}`);
        }
        const expiresInSeconds = raw === undefined ? DEFAULT_ROTATION_OVERLAP_SECONDS : Number(raw);
        const endpointId = typeof values.endpoint === 'string' ? values.endpoint : undefined;
        const owner = { merchantId, livemode: mode === 'live' };
        return h.withStore(io, async (store, { config }) => {
          if (!(await getMerchant(store, merchantId))) throw new h.UsageError(`merchant ${merchantId} does not exist`);
          const box = createSecretBox(loadOrCreateEncryptionKey({ configured: config.encryptionKey, dataDir: config.dataDir }));
          const rotated = await store.transaction(async (sql) => {
            if (!endpointId) {
              const { info, secret } = await rotateMerchantSecret(sql, box, owner, { expiresInSeconds });
              return { secret, previousSecretExpiresAt: info.previousSecretExpiresAt };
            }
            const result = await rotateEndpointSecret(sql, box, owner, endpointId, { expiresInSeconds });
            if (!result) throw new h.UsageError(`merchant ${merchantId} has no ${mode} webhook endpoint ${endpointId}`);
            return { secret: result.secret, previousSecretExpiresAt: result.previousSecretExpiresAt };
          });
          const what = endpointId ? `endpoint ${endpointId}` : `${mode === 'live' ? 'live' : 'sandbox'} session webhookUrls of ${merchantId}`;
          h.emit(
            io,
            json,
            { merchantId, livemode: owner.livemode, endpointId: endpointId ?? null, secret: rotated.secret, previousSecretExpiresAt: rotated.previousSecretExpiresAt },
            [
              `Rotated the signing secret of ${what}`,
              `  new secret (shown once): ${rotated.secret}`,
              rotated.previousSecretExpiresAt
                ? `  the old secret also signs every delivery until ${rotated.previousSecretExpiresAt.toISOString()}`
                : '  the old secret stopped signing now',
            ].join('\n'),
          );
          return 0;
        });
      },
    },
  };
}
