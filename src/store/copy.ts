import type pg from 'pg';
import { from as copyFromStdin } from 'pg-copy-streams';
import { once } from 'node:events';

/**
 * COPY's text format, for bulk input (`copyIn` of SqlWithCopy in ./index.ts): escaping a
 * field, and feeding rows to a `COPY … FROM STDIN`.
 */

/** SQL NULL in COPY's text format. */
export const COPY_NULL = '\\N';

/** Characters COPY's text format gives a meaning to (escape, field and row separators). */
const COPY_SPECIAL = /[\\\t\n\r]/;
const COPY_ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

/**
 * A text value as one field of COPY's text format (fields joined by tabs, rows ended by `\n`,
 * for `copyIn` of SqlWithCopy in ./index.ts): backslash, tab, newline and carriage return are escaped, so a
 * value from outside (an RPC answer) can never end its field or row early. Numbers need none.
 */
export function copyText(value: string): string {
  return COPY_SPECIAL.test(value) ? value.replace(/[\\\t\n\r]/g, (c) => COPY_ESCAPES[c]!) : value;
}

/** `COPY ... FROM STDIN` on `client`, fed `rows`; resolves once Postgres has confirmed it. */
export async function copyOn(client: pg.ClientBase, statement: string, rows: string): Promise<number> {
  const stream = client.query(copyFromStdin(statement));
  stream.end(rows);
  await once(stream, 'finish');
  return stream.rowCount;
}
