import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The `clients/` folder: every generated path is relative to it. */
export const CLIENTS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Writes `text` to `file` (creating folders) unless it already holds exactly that; true when written. */
export function writeIfChanged(file: string, text: string): boolean {
  if (fs.existsSync(file) && fs.readFileSync(file, 'utf8') === text) return false;
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
  return true;
}
