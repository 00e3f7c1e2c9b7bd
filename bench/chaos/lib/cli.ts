/**
 * The command line of the chaos runs (bench/chaos/*.ts): their `--name value` options, and the
 * end of the runs that return a report with `defects` (fuzz, receiver outage, database pressure).
 */
import { parseArgs } from 'node:util';

type Options<T> = { [K in keyof T]: T[K] extends number ? number : string };

/**
 * Parses the run's `--name value` options, each given with its default: a number where the
 * default is a number. An unknown option or a value that is not a number stops the run (exit 2)
 * with a message, rather than running with NaN.
 */
export function runOptions<T extends Record<string, number | string>>(defaults: T): Options<T> {
  const spec = Object.fromEntries(Object.entries(defaults).map(([name, value]) => [name, { type: 'string' as const, default: String(value) }]));
  let values: Record<string, string | undefined>;
  try {
    values = parseArgs({ options: spec }).values as Record<string, string | undefined>;
  } catch (error) {
    console.error((error as Error).message);
    process.exit(2);
  }
  const parsed: Record<string, number | string> = {};
  for (const [name, fallback] of Object.entries(defaults)) {
    const text = values[name] ?? String(fallback);
    if (typeof fallback === 'number' && (text.trim() === '' || !Number.isFinite(Number(text)))) {
      console.error(`--${name} must be a number, not ${JSON.stringify(text)}`);
      process.exit(2);
    }
    parsed[name] = typeof fallback === 'number' ? Number(text) : text;
  }
  return parsed as Options<T>;
}

/**
 * Prints a run's figures (the report without its defects) as JSON, then AUDIT PASSED or AUDIT
 * FAILED with the first 40 defects, each as `describe` writes it. @returns true when it passed.
 */
export function reportDefects<D>(report: { defects: D[] }, describe: (defect: D) => string = String): boolean {
  const { defects, ...figures } = report;
  console.log(JSON.stringify(figures, null, 2));
  if (defects.length === 0) {
    console.log('AUDIT PASSED: no defect');
    return true;
  }
  console.error(`AUDIT FAILED: ${defects.length} defects`);
  for (const defect of defects.slice(0, 40)) console.error(`  ${describe(defect)}`);
  return false;
}
