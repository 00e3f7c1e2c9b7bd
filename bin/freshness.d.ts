/** The newest modification time (ms) of any file under `dir`. */
export function newestSourceMtime(dir: string): number;
/** True when dist/BUILD records a build of sources no older than the newest file in src/. */
export function distIsCurrent(root: string): boolean;
