import { loadConfig } from '../../internal/config.ts';
import { createLogger } from '../../internal/logger.ts';
import { startDaemon, ROLES, type Role } from '../../daemon.ts';
import type { BootstrapResult } from '../../bootstrap.ts';
import { emit, jsonOption, UsageError, waitForSignal, type Command } from '../command.ts';

/** What the first start prints once: the merchant, its test key and sandbox webhook secret. */
function credentialLines(bootstrap: BootstrapResult, url: string): string[] {
  return [
    'First start: created a merchant and a sandbox API key. They are shown only this once:',
    `  merchant:          ${bootstrap.merchantId}`,
    `  test API key:      ${bootstrap.testKey}`,
    `  webhook secret:    ${bootstrap.sandboxWebhookSecret}  (signs sandbox session webhookUrls)`,
    '',
    `  curl -H "Authorization: Bearer ${bootstrap.testKey}" ${url}/api/v1/health`,
  ];
}

/** `svc start`: the daemon in the foreground, printing a ready line (and the first start's credentials). */
export const start: Command = {
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
    const logger = createLogger({ level: config.logLevel, format: config.logFormat });
    // Listen for SIGINT/SIGTERM before starting anything: a signal during start-up (or in the
    // instant after the ready line) then shuts down cleanly instead of killing the process.
    const stopRequested = io.stopSignal ?? waitForSignal();
    let created: BootstrapResult | undefined;
    let daemon: Awaited<ReturnType<typeof startDaemon>>;
    try {
      daemon = await startDaemon({ config, logger, roles, onBootstrap: (bootstrap) => (created = bootstrap) });
    } catch (error) {
      // The first start made the merchant and its key, then failed (a port in use, say): show them
      // now, or they would never be shown (the next start finds a merchant and creates none).
      if (created) emit(io, json, { status: 'failed', bootstrap: created }, credentialLines(created, config.publicUrl).join('\n'));
      throw error;
    }
    const ready = { status: 'running', roles, url: daemon.url ?? null, publicUrl: config.publicUrl, bootstrap: daemon.bootstrap ?? null };
    const lines = [`svc gateway is running (roles: ${roles.join(', ')})`];
    if (daemon.url) lines.push(`  API:    ${daemon.url}/api/v1  (health: ${daemon.url}/api/v1/health)`);
    if (daemon.bootstrap) lines.push('', ...credentialLines(daemon.bootstrap, daemon.url ?? config.publicUrl));
    emit(io, json, ready, lines.join('\n'));
    const reason = await stopRequested;
    logger.info({ msg: 'Shutting down', reason });
    await daemon.shutdown.kill(reason);
    // The last line says the stop is complete (the pool, the workers and Postgres are down), so an
    // operator at a terminal knows the prompt that follows is not an interrupted shutdown.
    emit(io, json, { status: 'stopped', reason }, `svc gateway stopped (${reason})`);
    return 0;
  },
};
