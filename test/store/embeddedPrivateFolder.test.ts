import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import net from 'node:net';
import { Writable } from 'node:stream';
import { expect, test } from 'vitest';
import pg from 'pg';
import { startEmbeddedPostgres } from '../../src/store/embedded.ts';
import { createLogger } from '../../src/internal/logger.ts';

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * A clone in a private folder (what `mktemp -d` makes: 0700, root-owned on these machines). As
 * root Postgres runs as the `postgres` OS user, which could not pass through it: `npm start` and
 * `npm test` died with EACCES spawning initdb. Runs only as root, where the rule applies.
 */
test('as root, the embedded Postgres starts in a data folder under a 0700 folder, which only gains the search bit', async (context) => {
  context.skip(
    process.getuid?.() !== 0,
    'needs root: only as root does the embedded Postgres run as another OS user (postgres), who must pass through the 0700 folder; as any other user it runs as the folder’s owner, so there is nothing to check (the CI machines run as root)',
  );
  const privateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-private-'));
  fs.chmodSync(privateDir, 0o700);
  const lines: { msg: string; folders?: string[] }[] = [];
  const logger = createLogger({
    level: 'info',
    destination: new Writable({
      write: (chunk, _e, done) => (
        String(chunk)
          .split('\n')
          .filter(Boolean)
          .forEach((line) => lines.push(JSON.parse(line))),
        done()
      ),
    }),
  });
  const embedded = await startEmbeddedPostgres({ dataDir: path.join(privateDir, 'clone', '.data'), port: await freePort(), logger });
  try {
    const client = new pg.Client({ connectionString: embedded.connectionString });
    await client.connect();
    expect((await client.query('SELECT 1 AS ok')).rows).toEqual([{ ok: 1 }]);
    await client.end();
    // Search (x) for others, never read: nothing in it can be listed by another user.
    expect(fs.statSync(privateDir).mode & 0o777).toBe(0o701);
    expect(lines.find((line) => line.msg.startsWith('Let the postgres OS user pass through'))?.folders).toContain(privateDir);
  } finally {
    await embedded.stop();
    fs.rmSync(privateDir, { recursive: true, force: true });
  }
}, 60_000);
