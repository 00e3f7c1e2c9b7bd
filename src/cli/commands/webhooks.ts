import { loadConfig } from '../../internal/config.ts';
import { createSecretBox, loadOrCreateEncryptionKey } from '../../internal/crypto.ts';
import { getMerchant, recordAudit } from '../../accounts/index.ts';
import { DEFAULT_ROTATION_OVERLAP_SECONDS, MAX_ROTATION_OVERLAP_SECONDS, rotateEndpointSecret, rotateMerchantSecret } from '../../delivery/index.ts';
import { MAX_REPLAY_EVENTS } from '../../delivery/replay.ts';
import { redeliverFailed } from '../../delivery/redeliverFailed.ts';
import { emit, jsonOption, operatorOf, parseTime, requireString, UsageError, waitForSignal, withStore, type Command } from '../command.ts';
import { listenForWebhooks } from './webhooksListen.ts';

/** `svc webhooks listen`: a local receiver for development (see webhooksListen.ts). */
export const webhooksListen: Command = {
  summary: 'receive, verify and print webhook events locally (registers a temporary endpoint)',
  usage: 'svc webhooks listen --key API_KEY [--port 4242] [--api URL] [--events payment.confirmed,…] [--json]',
  options: {
    key: { type: 'string', description: 'an API key with write scope; a test key listens to sandbox events (env SVC_API_KEY)' },
    port: { type: 'string', description: 'local port to receive on (default 4242; 0 picks one)' },
    api: { type: 'string', description: 'the daemon’s base URL (default SVC_PUBLIC_URL, i.e. http://HOST:PORT)' },
    events: { type: 'string', description: 'comma-separated event kinds (default all)' },
    ...jsonOption,
  },
  async run({ values, io, json }) {
    const apiKey = typeof values.key === 'string' ? values.key : io.env.SVC_API_KEY;
    if (!apiKey) throw new UsageError('--key is required (or set SVC_API_KEY)');
    const port = typeof values.port === 'string' ? Number(values.port) : 4242;
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError('--port must be a port number');
    const apiUrl = typeof values.api === 'string' ? values.api.replace(/\/+$/, '') : loadConfig(io.env).publicUrl;
    await listenForWebhooks({
      apiUrl,
      apiKey,
      port,
      ...(typeof values.events === 'string' ? { events: values.events.split(',').map((event) => event.trim()) } : {}),
      print: (line, data) => emit(io, json, data, line),
      stop: io.stopSignal ?? waitForSignal(),
    });
    return 0;
  },
};

/** `svc webhooks rotate-secret`: a new signing secret, printed once; the old one keeps signing beside it for a while. */
export const webhooksRotateSecret: Command = {
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
    ...jsonOption,
  },
  async run({ values, io, json }) {
    const merchantId = requireString(values, 'merchant');
    const mode = requireString(values, 'mode');
    if (mode !== 'test' && mode !== 'live') throw new UsageError('--mode must be test or live');
    const raw = values['expires-in'];
    if (raw !== undefined && !(typeof raw === 'string' && /^\d{1,6}$/.test(raw) && Number(raw) <= MAX_ROTATION_OVERLAP_SECONDS)) {
      throw new UsageError(`--expires-in must be a whole number of seconds from 0 to ${MAX_ROTATION_OVERLAP_SECONDS}`);
    }
    const expiresInSeconds = raw === undefined ? DEFAULT_ROTATION_OVERLAP_SECONDS : Number(raw);
    const endpointId = typeof values.endpoint === 'string' ? values.endpoint : undefined;
    const owner = { merchantId, livemode: mode === 'live' };
    return withStore(io, async (store, { config }) => {
      if (!(await getMerchant(store, merchantId))) throw new UsageError(`merchant ${merchantId} does not exist`);
      const box = createSecretBox(loadOrCreateEncryptionKey({ configured: config.encryptionKey, dataDir: config.dataDir }));
      const rotated = await store.transaction(async (sql) => {
        // The target as the dashboard and the API name it.
        const audit = () =>
          recordAudit(sql, {
            merchantId,
            actor: operatorOf(io),
            action: 'webhook.secret_rotated',
            target: endpointId ?? `session secret (${mode})`,
            livemode: owner.livemode,
            details: { expiresIn: expiresInSeconds },
          });
        if (!endpointId) {
          const { info, secret } = await rotateMerchantSecret(sql, box, owner, { expiresInSeconds });
          await audit();
          return { secret, previousSecretExpiresAt: info.previousSecretExpiresAt };
        }
        const result = await rotateEndpointSecret(sql, box, owner, endpointId, { expiresInSeconds });
        if (!result) throw new UsageError(`merchant ${merchantId} has no ${mode} webhook endpoint ${endpointId}`);
        await audit();
        return { secret: result.secret, previousSecretExpiresAt: result.previousSecretExpiresAt };
      });
      const what = endpointId ? `endpoint ${endpointId}` : `${mode === 'live' ? 'live' : 'sandbox'} session webhookUrls of ${merchantId}`;
      emit(
        io,
        json,
        {
          merchantId,
          livemode: owner.livemode,
          endpointId: endpointId ?? null,
          secret: rotated.secret,
          previousSecretExpiresAt: rotated.previousSecretExpiresAt,
        },
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
};

/** `svc webhooks redeliver --merchant M --since T [--until T]`: after a receiver outage (delivery/redeliverFailed.ts). */
export const webhooksRedeliver: Command = {
  summary: 'send again a merchant’s failed webhook deliveries made in a time window (after a receiver outage)',
  usage: 'svc webhooks redeliver --merchant ID --since TIME [--until TIME] [--mode live|test] [--dry-run] [--json]',
  options: {
    merchant: { type: 'string', description: 'merchant id (mer_…)' },
    since: { type: 'string', description: 'start of the window (ISO 8601, e.g. 2026-11-20T14:00:00Z): deliveries made at or after it' },
    until: { type: 'string', description: 'end of the window, exclusive (default now)' },
    mode: { type: 'string', description: 'live (default) or test: which mode’s deliveries' },
    'dry-run': { type: 'boolean', description: 'list what would be sent, send nothing' },
    ...jsonOption,
  },
  async run({ values, io, json }) {
    const merchantId = requireString(values, 'merchant');
    const since = parseTime('since', requireString(values, 'since'));
    const until = typeof values.until === 'string' ? parseTime('until', values.until) : new Date();
    if (until <= since) throw new UsageError('--until must be later than --since');
    const mode = (values.mode as string | undefined) ?? 'live';
    if (mode !== 'live' && mode !== 'test') throw new UsageError('--mode must be live or test');
    return withStore(io, async (store) => {
      if (!(await getMerchant(store, merchantId))) throw new UsageError(`merchant ${merchantId} does not exist`);
      const result = await store.transaction(async (sql) => {
        const done = await redeliverFailed(sql, { merchantId, livemode: mode === 'live', since, until, dryRun: values['dry-run'] === true });
        if (done !== 'too_many' && !done.dryRun && done.redelivered.length > 0) {
          await recordAudit(sql, {
            merchantId,
            actor: operatorOf(io),
            action: 'webhook.redelivered',
            target: null,
            livemode: mode === 'live',
            details: { failedSince: since.toISOString(), until: until.toISOString(), deliveries: done.redelivered.length },
          });
        }
        return done;
      });
      if (result === 'too_many') throw new UsageError(`more than ${MAX_REPLAY_EVENTS} failed deliveries in the window: split it`);
      const sent = result.redelivered.length;
      const lines = [
        `${result.failed} failed deliveries of ${merchantId} (${mode}) from ${since.toISOString()} to ${until.toISOString()}: ${result.dryRun ? `${sent} redeliveries would be made` : `${sent} redelivered`}, ${result.skipped.length} skipped`,
        ...result.redelivered.map(
          (entry) => `  ${result.dryRun ? 'would redeliver' : 'redelivered'} ${entry.eventId} to ${entry.endpointId ?? 'its original targets'}`,
        ),
        ...result.skipped.map((entry) => `  skipped ${entry.eventId} (${entry.endpointId ?? 'session URL'}): ${entry.reason}`),
      ];
      emit(io, json, result, lines.join('\n'));
      return 0;
    });
  },
};
