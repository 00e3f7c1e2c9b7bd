import fs from 'node:fs';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { NonRetryableError } from '../internal/errors.ts';
import { emit, UsageError, type Command, type Io } from './command.ts';

/** Tests pass their own Io. */
export type { Io } from './command.ts';

/**
 * Every `svc` command by the words that call it, in the order the global help lists them, each
 * imported when it runs (issue 28): a static import of every command put each one's code (the
 * webhook commands' delivery code and undici, the deposit commands' signing clients) into every
 * `svc start`. Help that lists commands imports the ones it lists.
 */
const commands: Record<string, () => Promise<Command>> = {
  start: async () => (await import('./commands/start.ts')).start,
  migrate: async () => (await import('./commands/migrate.ts')).migrate,
  'merchants create': async () => (await import('./commands/merchants.ts')).merchantsCreate,
  'merchants list': async () => (await import('./commands/merchants.ts')).merchantsList,
  'merchants update': async () => (await import('./commands/merchants.ts')).merchantsUpdate,
  'wallets add': async () => (await import('./commands/wallets.ts')).walletsAdd,
  'wallets default': async () => (await import('./commands/wallets.ts')).walletsDefault,
  'wallets remove': async () => (await import('./commands/wallets.ts')).walletsRemove,
  'keys create': async () => (await import('./commands/keys.ts')).keysCreate,
  'keys list': async () => (await import('./commands/keys.ts')).keysList,
  'keys revoke': async () => (await import('./commands/keys.ts')).keysRevoke,
  'users create': async () => (await import('./commands/users.ts')).usersCreate,
  'users list': async () => (await import('./commands/users.ts')).usersList,
  'users disable': async () => (await import('./commands/users.ts')).usersDisable,
  'users reset-two-factor': async () => (await import('./commands/users.ts')).usersResetTwoFactor,
  'webhooks listen': async () => (await import('./commands/webhooks.ts')).webhooksListen,
  'webhooks rotate-secret': async () => (await import('./commands/webhooks.ts')).webhooksRotateSecret,
  'ingest status': async () => (await import('./commands/ingest.ts')).ingestStatus,
  'ingest rescan': async () => (await import('./commands/ingest.ts')).ingestRescan,
  'webhooks redeliver': async () => (await import('./commands/webhooks.ts')).webhooksRedeliver,
  'deposits deploy-factory': async () => (await import('./commands/deposits.ts')).depositsDeployFactory,
  'deposits sweep': async () => (await import('./commands/deposits.ts')).depositsSweep,
  config: async () => (await import('./commands/config.ts')).config,
};

/** The summaries of the named commands (importing each). */
async function summaries(names: string[]): Promise<Map<string, string>> {
  const loaded = await Promise.all(names.map(async (name) => [name, (await commands[name]!()).summary] as const));
  return new Map(loaded);
}

function helpFor(name: string, command: Command): string {
  const options = Object.entries(command.options).map(([option, spec]) => {
    return `  --${option}${spec.type === 'string' ? ' VALUE' : ''}\n      ${spec.description}`;
  });
  return [`svc ${name}: ${command.summary}`, '', `Usage: ${command.usage}`, '', 'Options:', ...options, '  --help\n      this help'].join('\n');
}

async function globalHelp(): Promise<string> {
  const summaryOf = await summaries(Object.keys(commands));
  const width = Math.max(...Object.keys(commands).map((name) => name.length));
  return [
    'svc: the svc gateway daemon and its operator commands',
    '',
    'Usage: svc COMMAND [options]     (svc COMMAND --help for a command’s options, svc GROUP --help for a group’s,',
    '                                   svc --version for the version)',
    '',
    'Commands:',
    ...Object.keys(commands).map((name) => `  ${name.padEnd(width)}  ${summaryOf.get(name)}`),
    '',
    'Every command reads the same environment variables as the daemon (svc config lists them)',
    'and takes --json for machine-readable output.',
  ].join('\n');
}

/** The command groups (`svc wallets`, `svc keys`, …): the first word of every two-word command. */
function groupOf(word: string | undefined): string | undefined {
  return Object.keys(commands).some((name) => name.startsWith(`${word} `)) ? word : undefined;
}

async function groupHelp(group: string): Promise<string> {
  const names = Object.keys(commands).filter((name) => name.startsWith(`${group} `));
  const summaryOf = await summaries(names);
  const width = Math.max(...names.map((name) => name.length));
  return [
    `svc ${group}: ${names.map((name) => name.slice(group.length + 1)).join(', ')}`,
    '',
    `Usage: svc ${group} SUBCOMMAND [options]     (svc ${group} SUBCOMMAND --help for its options)`,
    '',
    'Subcommands:',
    ...names.map((name) => `  ${name.padEnd(width)}  ${summaryOf.get(name)}`),
  ].join('\n');
}

/**
 * The package's version: package.json sits two folders above this file both in src/cli and in
 * the compiled dist/cli (the container image copies package.json beside dist/).
 */
function version(): string {
  return (JSON.parse(fs.readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
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
      io.out(`${await globalHelp()}\n`);
      return 0;
    }
    if (argv[0] === '--version' || argv[0] === '-V' || argv[0] === 'version') {
      emit(io, argv.includes('--json'), { name: 'svc-gateway', version: version() }, `svc gateway ${version()}`);
      return 0;
    }
    const group = groupOf(argv[0]);
    if (group && (argv[1] === undefined || argv[1] === '--help' || argv[1] === '-h')) {
      // `svc wallets --help` asked for the list; a bare `svc wallets` is a usage mistake that gets it too.
      if (argv[1] === undefined) io.err(`svc: "${group}" needs a subcommand\n\n${await groupHelp(group)}\n`);
      else io.out(`${await groupHelp(group)}\n`);
      return argv[1] === undefined ? 2 : 0;
    }
    if (group) {
      io.err(`svc: unknown command "${argv.slice(0, 2).join(' ')}"\n\n${await groupHelp(group)}\n`);
      return 2;
    }
    io.err(`svc: unknown command "${argv.slice(0, 2).join(' ')}"\n\n${await globalHelp()}\n`);
    return 2;
  }
  const command = await commands[name]!();
  const rest = argv.slice(name.split(' ').length);
  const json = rest.includes('--json');
  try {
    if (rest.includes('--help') || rest.includes('-h')) {
      io.out(`${helpFor(name, command)}\n`);
      return 0;
    }
    let parsed: ReturnType<typeof parseArgs>;
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
  io.err(json ? `${JSON.stringify({ error: message })}\n` : `svc: ${message}\n`);
}
