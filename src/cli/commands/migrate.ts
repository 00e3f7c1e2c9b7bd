import { loadConfig } from '../../internal/config.ts';
import { createLogger } from '../../internal/logger.ts';
import { connectDatabase } from '../../store/connect.ts';
import { migrate as applyMigrations } from '../../store/migrate.ts';
import { emit, jsonOption, type Command } from '../command.ts';

/** `svc migrate`: apply pending migrations (under the migration lock) and exit. */
export const migrate: Command = {
  summary: 'apply pending database migrations and exit',
  usage: 'svc migrate [--json]',
  options: { ...jsonOption },
  async run({ io, json }) {
    const config = loadConfig(io.env);
    const logger = createLogger({ level: 'warn', destination: process.stderr });
    const database = await connectDatabase(config, logger);
    try {
      const applied = await applyMigrations({ connectionString: database.connectionString });
      emit(io, json, { applied }, applied.length > 0 ? `Applied migrations ${applied.join(', ')}` : 'Database is up to date');
    } finally {
      await database.stop();
    }
    return 0;
  },
};
