import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, describe, expect, test } from 'vitest';
import { serverPort } from '../helpers/anvil.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { loadConfig } from '../../src/internal/config.ts';
import type { ConfigError } from '../../src/internal/errors.ts';

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-stop-'));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) if (child.exitCode === null) process.kill(-child.pid!, 'SIGKILL');
  fs.rmSync(dataDir, { recursive: true, force: true });
});

/** The lines a logger wrote, once pino has flushed them. */
async function linesOf(format: 'json' | 'pretty' | undefined): Promise<string[]> {
  const stream = new PassThrough();
  let text = '';
  stream.on('data', (chunk) => (text += chunk));
  const logger = createLogger({ level: 'info', destination: stream, format });
  logger.info({ msg: 'Embedded Postgres started', port: 54329 });
  await new Promise((resolve) => setImmediate(resolve));
  return text.trim().split('\n');
}

describe('log format', () => {
  test('pretty: one readable line per record (time, level, message, fields), not JSON', async () => {
    const [line] = await linesOf('pretty');
    expect(line).toMatch(/^\[\d{2}:\d{2}:\d{2}\.\d{3}\] INFO: Embedded Postgres started \{"port":54329\}$/);
  });

  test('json, and unset on a stream that is not a terminal: one JSON object per line', async () => {
    for (const format of ['json', undefined] as const) {
      const [line] = await linesOf(format);
      expect(JSON.parse(line!)).toMatchObject({ level: 'info', msg: 'Embedded Postgres started', port: 54329 });
    }
  });

  test('SVC_LOG_FORMAT takes json or pretty; anything else is refused by name', () => {
    expect(loadConfig({ SVC_LOG_FORMAT: 'pretty' }).logFormat).toBe('pretty');
    expect(loadConfig({}).logFormat).toBeUndefined();
    expect(() => loadConfig({ SVC_LOG_FORMAT: 'xml' })).toThrow();
    try {
      loadConfig({ SVC_LOG_FORMAT: 'xml' });
    } catch (error) {
      expect((error as ConfigError).problems).toEqual(['SVC_LOG_FORMAT="xml": must be one of json, pretty']);
    }
  });
});

test('Ctrl-C on `svc start` (SIGINT to the whole process group, as a terminal sends it) stops quietly and says so last', async () => {
  // detached: the daemon leads a process group of its own, like a shell's foreground job, so the
  // signal below reaches every process in it, the embedded Postgres included if it were there.
  const child = spawn(process.execPath, ['bin/svc.js', 'start'], {
    env: {
      PATH: process.env.PATH!,
      HOME: process.env.HOME!,
      SVC_DATA_DIR: dataDir,
      PORT: '0',
      SVC_EMBEDDED_PG_PORT: String(await serverPort()),
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  children.push(child);
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  await expect.poll(() => output, { timeout: 90_000, interval: 200 }).toContain('svc gateway is running');
  process.kill(-child.pid!, 'SIGINT');
  expect(await exited, output).toBe(0);
  const lines = output.trim().split('\n');
  expect(lines.at(-1)).toBe('svc gateway stopped (SIGINT)');
  // No error on the way down: Postgres outlived the daemon's connections (before, the terminal's
  // signal stopped it first, and pg-boss logged a client dump per cut connection).
  expect(output).not.toContain('"level":"error"');
  expect(output).not.toContain('pg-boss error');
  // And it is stopped: its pid file is gone.
  expect(fs.existsSync(path.join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false);
}, 120_000);
