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

/**
 * `.ci/run` sets CI=true after installing every tool the suite uses: there a missing tool is a
 * broken gate, so the test fails instead of skipping (a skip would let the gate pass having
 * tested nothing).
 */
const inCi = process.env.CI === 'true';

/** `present`, unless the gate runs without the tool: then an error naming what to install. */
function required(present: boolean, tool: string, install: string): boolean {
  if (!present && inCi) throw new Error(`${tool} is missing on a CI run: .ci/run should have installed it (${install})`);
  return present;
}

export const hasGo = required(has('go'), 'go', 'apt-get install golang-go');
export const hasCargo = required(has('cargo'), 'cargo', 'apt-get install cargo');

/** Skips the test where `tool` is missing, except on a CI run, where that fails it (see {@link required}). */
export function skipUnlessInstalled(context: { skip(note?: string): void }, reason: string): void {
  if (inCi) throw new Error(`${reason}, on a CI run: .ci/run should have installed it`);
  context.skip(reason);
}

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
