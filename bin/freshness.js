// Is dist/ compiled from the sources as they are now? Shared by bin/svc.js and scripts/build.mjs.
import fs from 'node:fs';
import path from 'node:path';

/** The newest modification time (ms) of any file under `dir`; about 2 ms for src/. */
export function newestSourceMtime(dir) {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const mtime = fs.statSync(path.join(entry.parentPath ?? entry.path, entry.name)).mtimeMs;
    if (mtime > newest) newest = mtime;
  }
  return newest;
}

/** True when dist/BUILD records a build of sources no older than the newest file in src/. */
export function distIsCurrent(root) {
  try {
    const build = JSON.parse(fs.readFileSync(path.join(root, 'dist/BUILD'), 'utf8'));
    return build.newestSourceMtimeMs >= newestSourceMtime(path.join(root, 'src'));
  } catch {
    return false;
  }
}
