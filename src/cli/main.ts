import fs from 'node:fs';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { NonRetryableError } from '../internal/errors.ts';
import { emit, UsageError, type Command, type Io } from './command.ts';
import { start } from './commands/start.ts';
import { migrate } from './commands/migrate.ts';
import { merchantsCreate, merchantsList, merchantsUpdate } from './commands/merchants.ts';
import { walletsAdd, walletsDefault, walletsRemove } from './commands/wallets.ts';
import { keysCreate, keysList, keysRevoke } from './commands/keys.ts';
import { usersCreate, usersDisable, usersList, usersResetTwoFactor } from './commands/users.ts';
import { webhooksListen, webhooksRedeliver, webhooksRotateSecret } from './commands/webhooks.ts';
import { ingestRescan, ingestStatus } from './commands/ingest.ts';
import { config } from './commands/config.ts';
import { depositsDeployFactory, depositsSweep } from './commands/deposits.ts';

/** Tests pass their own Io. */
export type { Io } from './command.ts';

/** Every `svc` command by the words that call it, in the order the global help lists them. */
const commands: Record<string, Command> = {
  start,
  migrate,
  'merchants create': merchantsCreate,
  'merchants list': merchantsList,
  'merchants update': merchantsUpdate,
  'wallets add': walletsAdd,
  'wallets default': walletsDefault,
  'wallets remove': walletsRemove,
  'keys create': keysCreate,
  'keys list': keysList,
  'keys revoke': keysRevoke,
  'users create': usersCreate,
  'users list': usersList,
  'users disable': usersDisable,
  'users reset-two-factor': usersResetTwoFactor,
  'webhooks listen': webhooksListen,
  'webhooks rotate-secret': webhooksRotateSecret,
  'ingest status': ingestStatus,
  'ingest rescan': ingestRescan,
  'webhooks redeliver': webhooksRedeliver,
  'deposits deploy-factory': depositsDeployFactory,
  'deposits sweep': depositsSweep,
  config,
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
    'Usage: svc COMMAND [options]     (svc COMMAND --help for a command’s options, svc GROUP --help for a group’s,',
    '                                   svc --version for the version)',
    '',
    'Commands:',
    ...Object.entries(commands).map(([name, command]) => `  ${name.padEnd(width)}  ${command.summary}`),
    '',
    'Every command reads the same environment variables as the daemon (svc config lists them)',
    'and takes --json for machine-readable output.',
  ].join('\n');
}

/** The command groups (`svc wallets`, `svc keys`, …): the first word of every two-word command. */
function groupOf(word: string | undefined): string | undefined {
  return Object.keys(commands).some((name) => name.startsWith(`${word} `)) ? word : undefined;
}

function groupHelp(group: string): string {
  const names = Object.keys(commands).filter((name) => name.startsWith(`${group} `));
  const width = Math.max(...names.map((name) => name.length));
  return [
    `svc ${group}: ${names.map((name) => name.slice(group.length + 1)).join(', ')}`,
    '',
    `Usage: svc ${group} SUBCOMMAND [options]     (svc ${group} SUBCOMMAND --help for its options)`,
    '',
    'Subcommands:',
    ...names.map((name) => `  ${name.padEnd(width)}  ${commands[name]!.summary}`),
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
      io.out(`${globalHelp()}\n`);
      return 0;
    }
    if (argv[0] === '--version' || argv[0] === '-V' || argv[0] === 'version') {
      emit(io, argv.includes('--json'), { name: 'svc-gateway', version: version() }, `svc gateway ${version()}`);
      return 0;
    }
    const group = groupOf(argv[0]);
    if (group && (argv[1] === undefined || argv[1] === '--help' || argv[1] === '-h')) {
      // `svc wallets --help` asked for the list; a bare `svc wallets` is a usage mistake that gets it too.
      if (argv[1] === undefined) io.err(`svc: "${group}" needs a subcommand\n\n${groupHelp(group)}\n`);
      else io.out(`${groupHelp(group)}\n`);
      return argv[1] === undefined ? 2 : 0;
    }
    if (group) {
      io.err(`svc: unknown command "${argv.slice(0, 2).join(' ')}"\n\n${groupHelp(group)}\n`);
      return 2;
    }
    io.err(`svc: unknown command "${argv.slice(0, 2).join(' ')}"\n\n${globalHelp()}\n`);
    return 2;
  }
  const command = commands[name]!;
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
