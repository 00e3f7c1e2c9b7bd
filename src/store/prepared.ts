import type pg from 'pg';
import { createHash } from 'node:crypto';

/**
 * A statement Postgres parses and plans once per connection and then reuses (a named prepared
 * statement, from {@link prepared}). Worth it on the hot paths: parsing and planning were half of
 * Postgres's CPU per session creation (docs/benchmarks.md). Not the default, because after five
 * runs Postgres may keep a generic plan, which ignores the parameters' values: fine for lookups
 * by key, measured to be 9x slower for the delivery claim's skip scan. Prepare a statement only
 * when its generic plan was looked at.
 */
export interface PreparedStatement {
  readonly name: string;
  readonly text: string;
}

/** Texts prepared in this process, by text: one name each, however often {@link prepared} is called. */
const preparedByText = new Map<string, PreparedStatement>();

/**
 * Marks `text` (a fixed statement with `$n` parameters, never one with values inlined: each
 * distinct text is a plan kept by every connection) as prepared. The name is a hash of the text,
 * so the same text always gets the same name and two texts never share one.
 */
export function prepared(text: string): PreparedStatement {
  let statement = preparedByText.get(text);
  if (!statement) {
    statement = Object.freeze({ name: `svc_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`, text });
    preparedByText.set(text, statement);
  }
  return statement;
}

/** A statement's text, prepared or not (for logs and tests that record what was sent). */
export function statementText(statement: string | PreparedStatement): string {
  return typeof statement === 'string' ? statement : statement.text;
}

/**
 * What pg is given: a fresh object per call (pg writes `values` into the config it is handed, so a
 * shared one would mix up the values of concurrent calls).
 */
export function queryConfig(statement: string | PreparedStatement, values: unknown[] | undefined): pg.QueryConfig {
  return typeof statement === 'string' ? { text: statement, values } : { name: statement.name, text: statement.text, values };
}
