import { parseArgs, type ParseArgsConfig } from 'node:util';
import { loadConfig, CHAIN_NAMES, type ChainName, type Config } from '../internal/config.ts';
import { createLogger, type Logger } from '../internal/logger.ts';
import { NonRetryableError } from '../internal/errors.ts';
import { createSecretBox, loadOrCreateEncryptionKey } from '../internal/crypto.ts';
import { connectDatabase } from '../store/connect.ts';
import { migrate } from '../store/migrate.ts';
import { createStore, type Store } from '../store/index.ts';
import {
  addWallet,
  createApiKey,
  createMerchant,
  getMerchant,
  listApiKeys,
  listMerchants,
  listWallets,
  removeWallet,
  revokeApiKey,
  setDefaultWallet,
  SCOPES,
  type Scope,
} from '../accounts/index.ts';
import { startDaemon, ROLES, type Role } from '../daemon.ts';
import { formatConfigTable } from './configTable.ts';
import { webhookCommands } from './webhookCommands.ts';
import { setMerchantRateLimits } from '../api/rateLimits.ts';
import { canonicalAddress } from '../internal/addresses.ts';
import { ingestStatusCommand } from './ingestStatus.ts';
import { ingestRescanCommand } from './ingestRescan.ts';
import { webhooksRedeliverCommand } from './webhooksRedeliver.ts';

/** Where a command writes; tests pass their own. */
export interface Io {
  env: Record<string, string | undefined>;
  out: (text: string) => void;
  err: (text: string) => void;
  /** Resolves when the operator asks the daemon to stop (SIGINT/SIGTERM); tests resolve it themselves. */
  stopSignal?: Promise<string>;
}

/** A mistake in how the command was called: print the message and the command's help. */
class UsageError extends NonRetryableError {}

interface OptionSpec {
  type: 'string' | 'boolean';
  multiple?: boolean;
  description: string;
}

/** One `svc` command: its help and what it runs. */
export interface Command {
  summary: string;
  usage: string;
  options: Record<string, OptionSpec>;
  run(ctx: { values: Record<string, unknown>; positionals: string[]; io: Io; json: boolean }): Promise<number>;
}

const jsonOption = { json: { type: 'boolean' as const, description: 'machine-readable JSON output' } };

function emit(io: Io, json: boolean, data: unknown, human: string): void {
  io.out(json ? JSON.stringify(data, (_key, value) => (typeof value === 'bigint' ? value.toString() : value)) + '\n' : human + '\n');
}

/**
 * Opens the same database the daemon uses (DATABASE_URL or the embedded cluster, attaching to
 * it when a daemon already runs it), migrated, for one command.
 */
async function withStore<T>(io: Io, work: (store: Store, ctx: { config: Config; logger: Logger }) => Promise<T>): Promise<T> {
  const config = loadConfig(io.env);
  // Commands print their own results; the logger only speaks up about problems.
  const logger = createLogger({ level: config.logLevel === 'info' ? 'warn' : config.logLevel, destination: process.stderr });
  const database = await connectDatabase(config, logger);
  try {
    await migrate({ connectionString: database.connectionString });
    const store = createStore({ connectionString: database.connectionString, max: 2, applicationName: 'svc-cli' });
    try {
      return await work(store, { config, logger });
    } finally {
      await store.close();
    }
  } finally {
    await database.stop();
  }
}

function parseWallet(text: string): { chain: ChainName; address: string } {
  const separator = text.indexOf(':');
  const chain = text.slice(0, separator) as ChainName;
  if (separator < 0 || !CHAIN_NAMES.includes(chain)) {
    throw new UsageError(`--wallet ${JSON.stringify(text)} must be CHAIN:ADDRESS with CHAIN one of ${CHAIN_NAMES.join(', ')}`);
  }
  return { chain, address: text.slice(separator + 1) };
}

/** The merchant's wallet at CHAIN:ADDRESS (in any form the API accepts), or a usage error naming what is missing. */
async function findWallet(store: Store, merchantId: string, given: { chain: ChainName; address: string }) {
  if (!(await getMerchant(store, merchantId))) throw new UsageError(`merchant ${merchantId} does not exist`);
  const canonical = canonicalAddress(given.chain, given.address);
  const wallet = (await listWallets(store, { merchantId, chain: given.chain })).find((candidate) => candidate.address === canonical);
  if (!wallet) throw new UsageError(`merchant ${merchantId} has no wallet ${given.chain}:${given.address}; add it with svc wallets add (--default to make it the default)`);
  return wallet;
}

function requireString(values: Record<string, unknown>, name: string): string {
  const value = values[name];
  if (typeof value !== 'string' || value.trim() === '') throw new UsageError(`--${name} is required`);
  return value.trim();
}

const commands: Record<string, Command> = {
  start: {
    summary: 'run the daemon (API, ingesters and workers) until SIGINT/SIGTERM',
    usage: 'svc start [--role api,ingest,worker] [--json]',
    options: {
      role: { type: 'string', description: `comma-separated roles to run in this process (${ROLES.join(', ')}); default all` },
      ...jsonOption,
    },
    async run({ values, io, json }) {
      const roles = (typeof values.role === 'string' ? values.role.split(',').map((role) => role.trim()) : [...ROLES]) as Role[];
      const unknown = roles.filter((role) => !ROLES.includes(role));
      if (unknown.length > 0 || roles.length === 0) throw new UsageError(`--role must be a comma-separated list of ${ROLES.join(', ')}`);
      const config = loadConfig(io.env);
      const logger = createLogger({ level: config.logLevel });
      // Listen for SIGINT/SIGTERM before starting anything: a signal during start-up (or in the
      // instant after the ready line) then shuts down cleanly instead of killing the process.
      const stopRequested = io.stopSignal ?? waitForSignal();
      const daemon = await startDaemon({ config, logger, roles });
      const ready = { status: 'running', roles, url: daemon.url ?? null, publicUrl: config.publicUrl, bootstrap: daemon.bootstrap ?? null };
      const lines = [`svc gateway is running (roles: ${roles.join(', ')})`];
      if (daemon.url) lines.push(`  API:    ${daemon.url}/api/v1  (health: ${daemon.url}/api/v1/health)`);
      if (daemon.bootstrap) {
        lines.push(
          '',
          'First start: created a merchant and a sandbox API key. They are shown only this once:',
          `  merchant:          ${daemon.bootstrap.merchantId}`,
          `  test API key:      ${daemon.bootstrap.testKey}`,
          `  webhook secret:    ${daemon.bootstrap.sandboxWebhookSecret}  (signs sandbox session webhookUrls)`,
          '',
          `  curl -H "Authorization: Bearer ${daemon.bootstrap.testKey}" ${daemon.url ?? config.publicUrl}/api/v1/health`,
        );
      }
      emit(io, json, ready, lines.join('\n'));
      const reason = await stopRequested;
      logger.info({ msg: 'Shutting down', reason });
      await daemon.shutdown.kill(reason);
      return 0;
    },
  },

  migrate: {
    summary: 'apply pending database migrations and exit',
    usage: 'svc migrate [--json]',
    options: { ...jsonOption },
    async run({ io, json }) {
      const config = loadConfig(io.env);
      const logger = createLogger({ level: 'warn', destination: process.stderr });
      const database = await connectDatabase(config, logger);
      try {
        const applied = await migrate({ connectionString: database.connectionString });
        emit(io, json, { applied }, applied.length > 0 ? `Applied migrations ${applied.join(', ')}` : 'Database is up to date');
      } finally {
        await database.stop();
      }
      return 0;
    },
  },

  'merchants create': {
    summary: 'create a merchant (prints its live and sandbox webhook signing secrets once)',
    usage: 'svc merchants create --name NAME [--wallet CHAIN:ADDRESS …] [--json]',
    options: {
      name: { type: 'string', description: 'display name shown on checkout pages' },
      wallet: { type: 'string', multiple: true, description: 'a receiving wallet, e.g. polygon:0xAbc…; verified by the operator, not a default (svc wallets default)' },
      ...jsonOption,
    },
    async run({ values, io, json }) {
      const name = requireString(values, 'name');
      if (name.length > 200) throw new UsageError('--name must be at most 200 characters');
      const wallets = ((values.wallet as string[] | undefined) ?? []).map(parseWallet);
      return withStore(io, async (store, { config }) => {
        const box = createSecretBox(loadOrCreateEncryptionKey({ configured: config.encryptionKey, dataDir: config.dataDir }));
        const created = await store.transaction(async (sql) => {
          const { merchant, webhookSecrets } = await createMerchant(sql, box, { name });
          const added = [];
          for (const wallet of wallets) added.push(await addWallet(sql, { merchantId: merchant.id, ...wallet, verifiedBy: 'operator' }));
          return { merchant, webhookSecrets, wallets: added };
        });
        emit(
          io,
          json,
          created,
          [
            `Created merchant ${created.merchant.id} (${created.merchant.name})`,
            `  live webhook signing secret (shown once):    ${created.webhookSecrets.live}`,
            `  sandbox webhook signing secret (shown once): ${created.webhookSecrets.sandbox}`,
            ...created.wallets.map((wallet) => `  wallet ${wallet.chain}:${wallet.address} (verified by operator)`),
          ].join('\n'),
        );
        return 0;
      });
    },
  },

  'merchants list': {
    summary: 'list merchants',
    usage: 'svc merchants list [--json]',
    options: { ...jsonOption },
    async run({ io, json }) {
      return withStore(io, async (store) => {
        const merchants = await listMerchants(store);
        const withWallets = await Promise.all(merchants.map(async (merchant) => ({ ...merchant, wallets: await listWallets(store, { merchantId: merchant.id }) })));
        emit(
          io,
          json,
          withWallets,
          withWallets.length === 0
            ? 'No merchants yet'
            : withWallets
                .map((m) => `${m.id}  ${m.name}  created ${m.createdAt.toISOString()}${m.wallets.map((w) => `\n    ${w.chain}:${w.address}${w.verified ? '' : ' (unverified)'}${w.isDefault ? ' (default)' : ''}`).join('')}`)
                .join('\n'),
        );
        return 0;
      });
    },
  },

  'merchants update': {
    summary: 'change a merchant’s settings: rate limits, bridged tokens, payment tolerance',
    usage: 'svc merchants update --merchant ID [--create-per-minute N] [--read-per-minute N] [--write-per-minute N] [--accept-bridged true|false] [--tolerance-bps N] [--json]',
    options: {
      merchant: { type: 'string', description: 'merchant id (mer_…)' },
      'create-per-minute': { type: 'string', description: 'payment creations per key per minute (spec default 10); "default" resets' },
      'read-per-minute': { type: 'string', description: 'reads per key per minute (spec default 30); "default" resets' },
      'write-per-minute': { type: 'string', description: 'other writes per key per minute (default 30); "default" resets' },
      'accept-bridged': { type: 'string', description: 'accept bridged tokens (USDC.e, …) where a chain lists them: true or false' },
      'tolerance-bps': { type: 'string', description: 'payment tolerance in basis points of the due amount, 0 to 1000 (default 0: the full amount must arrive)' },
      ...jsonOption,
    },
    async run({ values, io, json }) {
      const merchantId = requireString(values, 'merchant');
      const limit = (name: string): number | null | undefined => {
        const raw = values[name];
        if (raw === undefined) return undefined;
        if (raw === 'default') return null;
        if (typeof raw !== 'string' || !/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > 1_000_000) throw new UsageError(`--${name} must be a whole number from 1 to 1000000, or "default"`);
        return Number(raw);
      };
      const limits = { create: limit('create-per-minute'), read: limit('read-per-minute'), write: limit('write-per-minute') };
      const bridged = values['accept-bridged'];
      if (bridged !== undefined && bridged !== 'true' && bridged !== 'false') throw new UsageError('--accept-bridged must be true or false');
      const tolerance = values['tolerance-bps'];
      if (tolerance !== undefined && !(typeof tolerance === 'string' && /^\d+$/.test(tolerance) && Number(tolerance) <= 1000)) throw new UsageError('--tolerance-bps must be a whole number from 0 to 1000');
      return withStore(io, async (store) => {
        if (!(await getMerchant(store, merchantId))) throw new UsageError(`merchant ${merchantId} does not exist`);
        const settings = await store.transaction(async (sql) => {
          if (Object.values(limits).some((value) => value !== undefined)) {
            await setMerchantRateLimits(sql, {
              merchantId,
              ...(limits.create !== undefined ? { create: limits.create } : {}),
              ...(limits.read !== undefined ? { read: limits.read } : {}),
              ...(limits.write !== undefined ? { write: limits.write } : {}),
            });
          }
          if (bridged !== undefined) await sql.query('UPDATE merchants SET accept_bridged_tokens = $2 WHERE id = $1', [merchantId, bridged === 'true']);
          if (tolerance !== undefined) await sql.query('UPDATE merchants SET payment_tolerance_bps = $2 WHERE id = $1', [merchantId, Number(tolerance)]);
          const { rows } = await sql.query<Record<string, unknown>>(
            `SELECT m.id, m.accept_bridged_tokens AS "acceptBridgedTokens", m.payment_tolerance_bps AS "paymentToleranceBps",
                    l.create_per_minute AS "createPerMinute", l.read_per_minute AS "readPerMinute", l.write_per_minute AS "writePerMinute"
               FROM merchants m LEFT JOIN merchant_rate_limits l ON l.merchant_id = m.id WHERE m.id = $1`,
            [merchantId],
          );
          return rows[0]!;
        });
        emit(
          io,
          json,
          settings,
          `Merchant ${merchantId}: bridged tokens ${settings.acceptBridgedTokens ? 'accepted' : 'refused'}, tolerance ${String(settings.paymentToleranceBps)} bps, ` +
            `limits per key per minute: create ${String(settings.createPerMinute ?? 'default')}, read ${String(settings.readPerMinute ?? 'default')}, write ${String(settings.writePerMinute ?? 'default')}`,
        );
        return 0;
      });
    },
  },

  'wallets add': {
    summary: 'add a receiving wallet to a merchant, verified by the operator (--default: live payments without merchantWallet pay it)',
    usage: 'svc wallets add --merchant ID --wallet CHAIN:ADDRESS [--default] [--json]',
    options: {
      merchant: { type: 'string', description: 'merchant id (mer_…)' },
      wallet: { type: 'string', description: 'CHAIN:ADDRESS' },
      default: { type: 'boolean', description: 'make it the default wallet of its chain (replaces the previous default)' },
      ...jsonOption,
    },
    async run({ values, io, json }) {
      const merchantId = requireString(values, 'merchant');
      const wallet = parseWallet(requireString(values, 'wallet'));
      return withStore(io, async (store) => {
        if (!(await getMerchant(store, merchantId))) throw new UsageError(`merchant ${merchantId} does not exist`);
        const added = await store.transaction((sql) => addWallet(sql, { merchantId, ...wallet, verifiedBy: 'operator', makeDefault: values.default === true }));
        emit(io, json, added, `Wallet ${added.id}: ${added.chain}:${added.address} (verified by operator${added.isDefault ? ', default' : ''})`);
        return 0;
      });
    },
  },

  'wallets default': {
    summary: 'make a verified wallet of a merchant the default of its chain',
    usage: 'svc wallets default --merchant ID --wallet CHAIN:ADDRESS [--json]',
    options: { merchant: { type: 'string', description: 'merchant id (mer_…)' }, wallet: { type: 'string', description: 'CHAIN:ADDRESS of one of its wallets' }, ...jsonOption },
    async run({ values, io, json }) {
      const merchantId = requireString(values, 'merchant');
      const given = parseWallet(requireString(values, 'wallet'));
      return withStore(io, async (store) => {
        const wallet = await findWallet(store, merchantId, given);
        const updated = await store.transaction((sql) => setDefaultWallet(sql, { merchantId, walletId: wallet.id }));
        emit(io, json, updated, `Wallet ${updated.id}: ${updated.chain}:${updated.address} is now the default on ${updated.chain}`);
        return 0;
      });
    },
  },

  'wallets remove': {
    summary: 'remove a receiving wallet (refused while open live sessions or active links use it)',
    usage: 'svc wallets remove --merchant ID --wallet CHAIN:ADDRESS [--json]',
    options: { merchant: { type: 'string', description: 'merchant id (mer_…)' }, wallet: { type: 'string', description: 'CHAIN:ADDRESS of one of its wallets' }, ...jsonOption },
    async run({ values, io, json }) {
      const merchantId = requireString(values, 'merchant');
      const given = parseWallet(requireString(values, 'wallet'));
      return withStore(io, async (store) => {
        const wallet = await findWallet(store, merchantId, given);
        const removed = await store.transaction((sql) => removeWallet(sql, { merchantId, walletId: wallet.id }));
        emit(io, json, { ...removed, deleted: true }, `Removed wallet ${removed.id}: ${removed.chain}:${removed.address}${removed.isDefault ? ` (${removed.chain} has no default wallet now)` : ''}`);
        return 0;
      });
    },
  },

  'keys create': {
    summary: 'create an API key (printed once; only its hash is stored)',
    usage: 'svc keys create --merchant ID --mode test|live [--scopes read,write] [--style plain|sk] [--description TEXT] [--json]',
    options: {
      merchant: { type: 'string', description: 'merchant id (mer_…)' },
      mode: { type: 'string', description: 'test (sandbox) or live (production)' },
      scopes: { type: 'string', description: `comma-separated scopes (${SCOPES.join(', ')}); default all. "read" alone makes a read-only key` },
      style: { type: 'string', description: 'prefix style: plain (svc_test_/svc_live_, default) or sk (svc_sk_/svc_sk_live_)' },
      description: { type: 'string', description: 'a note to recognise the key by' },
      ...jsonOption,
    },
    async run({ values, io, json }) {
      const merchantId = requireString(values, 'merchant');
      const mode = requireString(values, 'mode');
      if (mode !== 'test' && mode !== 'live') throw new UsageError('--mode must be test or live');
      const scopes = typeof values.scopes === 'string' ? values.scopes.split(',').map((scope) => scope.trim()) : [...SCOPES];
      const badScopes = scopes.filter((scope) => !(SCOPES as readonly string[]).includes(scope));
      if (badScopes.length > 0 || scopes.length === 0) throw new UsageError(`--scopes must be a comma-separated list of ${SCOPES.join(', ')}`);
      const style = (values.style as string | undefined) ?? 'plain';
      if (style !== 'plain' && style !== 'sk') throw new UsageError('--style must be plain or sk');
      return withStore(io, async (store) => {
        if (!(await getMerchant(store, merchantId))) throw new UsageError(`merchant ${merchantId} does not exist`);
        const { apiKey, secret } = await createApiKey(store, {
          merchantId,
          livemode: mode === 'live',
          scopes: scopes as Scope[],
          style,
          ...(typeof values.description === 'string' ? { description: values.description } : {}),
        });
        emit(io, json, { ...apiKey, secret }, `Created ${mode} key ${apiKey.id} with scopes ${apiKey.scopes.join(', ')}\n  ${secret}\n  (shown once; store it now)`);
        return 0;
      });
    },
  },

  'keys list': {
    summary: 'list API keys (never their secrets)',
    usage: 'svc keys list [--merchant ID] [--json]',
    options: { merchant: { type: 'string', description: 'only this merchant’s keys' }, ...jsonOption },
    async run({ values, io, json }) {
      return withStore(io, async (store) => {
        const keys = await listApiKeys(store, typeof values.merchant === 'string' ? { merchantId: values.merchant } : {});
        emit(
          io,
          json,
          keys,
          keys.length === 0
            ? 'No API keys'
            : keys
                .map((key) =>
                  [
                    key.id,
                    key.merchantId,
                    key.livemode ? 'live' : 'test',
                    key.hint,
                    key.scopes.join(','),
                    key.revokedAt ? `revoked ${key.revokedAt.toISOString()}` : 'active',
                    `last used ${key.lastUsedAt?.toISOString() ?? 'never'}`,
                  ].join('  '),
                )
                .join('\n'),
        );
        return 0;
      });
    },
  },

  'keys revoke': {
    summary: 'revoke an API key; requests with it get 401 from then on',
    usage: 'svc keys revoke KEY_ID [--json]',
    options: { ...jsonOption },
    async run({ positionals, io, json }) {
      const id = positionals[0];
      if (!id) throw new UsageError('give the key id (key_…) to revoke');
      return withStore(io, async (store) => {
        const key = await revokeApiKey(store, id);
        if (!key) throw new UsageError(`API key ${id} does not exist`);
        emit(io, json, key, `Revoked ${key.id} (${key.hint}) at ${key.revokedAt!.toISOString()}`);
        return 0;
      });
    },
  },

  ...webhookCommands({ UsageError, jsonOption, emit, withStore, requireString, waitForSignal }),

  'ingest status': ingestStatusCommand({ UsageError, withStore, emit }),
  'ingest rescan': ingestRescanCommand({ UsageError, withStore, emit }),
  'webhooks redeliver': webhooksRedeliverCommand({ UsageError, withStore, emit }),

  config: {
    summary: 'list the environment variables the daemon reads, with their current values checked',
    usage: 'svc config [--json]',
    options: { ...jsonOption },
    async run({ io, json }) {
      const table = formatConfigTable(io.env);
      emit(io, json, table.rows, table.text);
      return table.ok ? 0 : 1;
    },
  },
};

function helpFor(name: string, command: Command): string {
  const options = Object.entries(command.options).map(([option, spec]) => {
    return `  --${option}${spec.type === 'string' ? ' VALUE' : ''}\n      ${spec.description}`;
  });
  return [`svc ${name}: ${command.summary}`, '', `Usage: ${command.usage}`, '', 'Options:', ...options, '  --help\n      this help'].join('\n');
}

function globalHelp(): string {
  const width = Math.max(...Object.keys(commands).map((name) => name.length));
  return [
    'svc: the svc gateway daemon and its operator commands',
    '',
    'Usage: svc COMMAND [options]     (svc COMMAND --help for a command’s options)',
    '',
    'Commands:',
    ...Object.entries(commands).map(([name, command]) => `  ${name.padEnd(width)}  ${command.summary}`),
    '',
    'Every command reads the same environment variables as the daemon (svc config lists them)',
    'and takes --json for machine-readable output.',
  ].join('\n');
}

function waitForSignal(): Promise<string> {
  return new Promise((resolve) => {
    const onSignal = (signal: string) => {
      resolve(signal);
      // A second signal while draining means "now".
      process.once('SIGINT', () => process.exit(130));
      process.once('SIGTERM', () => process.exit(143));
    };
    process.once('SIGINT', () => onSignal('SIGINT'));
    process.once('SIGTERM', () => onSignal('SIGTERM'));
  });
}

const defaultIo: Io = {
  env: process.env,
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
};

/**
 * Runs one `svc` command line. @returns the process exit code: 0 success, 1 failure, 2 usage.
 */
export async function main(argv: string[], io: Io = defaultIo): Promise<number> {
  const name = [argv.slice(0, 2).join(' '), argv[0] ?? ''].find((candidate) => candidate in commands);
  if (!name) {
    if (argv.length === 0 || argv[0] === '--help' || argv[0] === '-h' || argv[0] === 'help') {
      io.out(globalHelp() + '\n');
      return 0;
    }
    io.err(`svc: unknown command "${argv.slice(0, 2).join(' ')}"\n\n${globalHelp()}\n`);
    return 2;
  }
  const command = commands[name]!;
  const rest = argv.slice(name.split(' ').length);
  const json = rest.includes('--json');
  try {
    if (rest.includes('--help') || rest.includes('-h')) {
      io.out(helpFor(name, command) + '\n');
      return 0;
    }
    let parsed;
    try {
      parsed = parseArgs({ args: rest, options: command.options as NonNullable<ParseArgsConfig['options']>, allowPositionals: true, strict: true });
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
    return await command.run({ values: parsed.values as Record<string, unknown>, positionals: parsed.positionals, io, json });
  } catch (error) {
    if (error instanceof UsageError) {
      reportError(io, json, error.message);
      if (!json) io.err(`\n${helpFor(name, command)}\n`);
      return 2;
    }
    if (error instanceof NonRetryableError) {
      reportError(io, json, error.message);
      return 1;
    }
    reportError(io, json, `unexpected error: ${(error as Error).stack ?? String(error)}`);
    return 1;
  }
}

function reportError(io: Io, json: boolean, message: string): void {
  io.err(json ? JSON.stringify({ error: message }) + '\n' : `svc: ${message}\n`);
}
