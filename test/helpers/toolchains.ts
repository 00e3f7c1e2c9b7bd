import { execFileSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';

/**
 * The Go and Rust toolchains the client libraries' tests need. `.ci/run` installs them from
 * Debian (golang-go; cargo is on the machine image, or Debian's); a developer machine without
 * one skips those tests with a message saying so, rather than failing on a missing program.
 */
function has(command: string): boolean {
  try {
    execFileSync(command, ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    try {
      execFileSync(command, ['version'], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  }
}

export const hasGo = has('go');
export const hasCargo = has('cargo');

/** Why a test is skipped, shown in the test's name when it is. */
export const goMissing = hasGo ? '' : ' (skipped: `go` is not installed; `bash .ci/run` installs golang-go)';
export const cargoMissing = hasCargo ? '' : ' (skipped: `cargo` is not installed; `bash .ci/run` installs it)';

/**
 * Go without the network (these machines reach no module proxy; the library needs only the
 * standard library), its build cache out of the tree and kept between runs.
 */
export const goEnv = {
  ...process.env,
  GOPROXY: 'off',
  GOFLAGS: '-mod=mod',
  GOTOOLCHAIN: 'local',
  GOCACHE: process.env.GOCACHE ?? path.join(os.tmpdir(), 'svc-gateway-go-cache'),
};

/** Cargo offline against Debian's crates (clients/rust/.cargo/config.toml); its target dir is clients/rust/target (git-ignored). */
export const cargoEnv = { ...process.env, CARGO_NET_OFFLINE: 'true', CARGO_TERM_COLOR: 'never' };
