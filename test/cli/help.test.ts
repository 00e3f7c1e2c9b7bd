import fs from 'node:fs';
import { describe, expect, test } from 'vitest';
import { main, type Io } from '../../src/cli/main.ts';

/** Runs `svc …` in process; these commands touch no database. */
async function svc(...argv: string[]) {
  let out = '';
  let err = '';
  const io: Io = { env: {}, out: (text) => (out += text), err: (text) => (err += text) };
  const code = await main(argv, io);
  return { code, out, err };
}

describe('svc help and version', () => {
  test('svc --version prints the package version (and --json an object)', async () => {
    const { version } = JSON.parse(fs.readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    expect(await svc('--version')).toEqual({ code: 0, out: `svc gateway ${version}\n`, err: '' });
    const json = await svc('--version', '--json');
    expect(JSON.parse(json.out)).toEqual({ name: 'svc-gateway', version });
  });

  test('every command group answers --help with its subcommands, not "unknown command"', async () => {
    for (const [group, subcommands] of [
      ['merchants', ['create', 'list', 'update']],
      ['wallets', ['add', 'default', 'remove']],
      ['keys', ['create', 'list', 'revoke']],
      ['users', ['create', 'list', 'disable']],
      ['webhooks', ['listen', 'rotate-secret', 'redeliver']],
      ['ingest', ['status', 'rescan']],
    ] as const) {
      const help = await svc(group, '--help');
      expect(help.code, group).toBe(0);
      expect(help.err).toBe('');
      expect(help.out).not.toContain('unknown command');
      for (const sub of subcommands) expect(help.out).toContain(`  ${group} ${sub}`);
      expect((await svc(group, '-h')).out).toBe(help.out);
    }
  });

  test('a bare group or an unknown subcommand exits 2 and lists the group’s subcommands', async () => {
    const bare = await svc('wallets');
    expect(bare.code).toBe(2);
    expect(bare.err).toContain('svc: "wallets" needs a subcommand');
    expect(bare.err).toContain('  wallets add');
    const unknown = await svc('keys', 'bogus');
    expect(unknown.code).toBe(2);
    expect(unknown.err).toContain('svc: unknown command "keys bogus"');
    expect(unknown.err).toContain('  keys revoke');
  });
});
