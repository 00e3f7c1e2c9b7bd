#!/usr/bin/env bash
# Runs coinbase/x402's own end-to-end client and server (e2e/clients/fetch, e2e/servers/hono)
# against this gateway's facilitator on anvil (docs/agents.md, "coinbase/x402's e2e suite").
# Nothing is added to package.json: the e2e programs' npm packages are installed into a scratch
# directory when this runs (network to the npm registry needed once; then SVC_X402_E2E_DIR reuses it).
#
#   bench/x402-e2e/run.sh [path to a coinbase/x402 checkout or git dir]
#
# Without a path it clones https://github.com/coinbase/x402 (shallow) into the scratch directory.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
work="${SVC_X402_E2E_DIR:-${TMPDIR:-/tmp}/svc-x402-e2e}"
source="${1:-}"
mkdir -p "$work"

# 1. The e2e sources: the fetch client and the hono server, unchanged (their routes' $0.001 too:
#    the facilitator takes settlements down to 0.001, docs/agents.md). A scratch directory from an
#    earlier version of this script holds their server with the price raised to "$0.01", a string
#    their source does not have: copy theirs again.
if grep -q '"\$0\.01"' "$work/server/index.ts" 2>/dev/null; then rm -f "$work/client/index.ts" "$work/server/index.ts"; fi
if [ ! -f "$work/client/index.ts" ]; then
  if [ -z "$source" ] && [ -d "$work/x402" ]; then source="$work/x402"; fi
  if [ -z "$source" ]; then
    git clone --depth 1 https://github.com/coinbase/x402 "$work/x402"
    source="$work/x402"
  fi
  mkdir -p "$work/client" "$work/server"
  if [ -d "$source/e2e" ]; then
    cp "$source/e2e/clients/fetch/index.ts" "$work/client/index.ts"
    cp "$source/e2e/servers/hono/index.ts" "$work/server/index.ts"
    git -C "$source" rev-parse HEAD > "$work/commit" 2>/dev/null || echo unknown > "$work/commit"
  else # a bare git dir (e.g. the mirror the tool `fetch` gives)
    git --git-dir="$source" show HEAD:e2e/clients/fetch/index.ts > "$work/client/index.ts"
    git --git-dir="$source" show HEAD:e2e/servers/hono/index.ts > "$work/server/index.ts"
    git --git-dir="$source" rev-parse HEAD > "$work/commit"
  fi
fi

# 2. Their npm dependencies, as published (the e2e's package.json names workspace:* versions).
if [ ! -d "$work/node_modules/@x402/hono" ]; then
  echo '{ "name": "svc-x402-e2e", "private": true, "type": "module" }' > "$work/package.json"
  x402=$(node -p "require('$root/node_modules/@x402/core/package.json').version")
  (cd "$work" && npm install --no-save --no-package-lock --no-audit --no-fund \
    "@x402/core@$x402" "@x402/evm@$x402" "@x402/svm@$x402" "@x402/fetch@$x402" "@x402/hono@$x402" "@x402/extensions@$x402" \
    @hono/node-server hono dotenv viem @solana/kit @scure/base tsx)
fi

# 3. Stubs for the chains this gateway does not settle, whose code paths run only with their keys
#    (APTOS_*, STELLAR_*, AVM_* unset): @x402/aptos is not published on npm, and the others are
#    large SDKs the EVM run never calls. Any use throws.
stub() { # package, subpaths, exported names
  local dir="$work/node_modules/$1"; rm -rf "$dir"; mkdir -p "$dir"
  local exports='{ ".": "./index.js"'
  for sub in $2; do exports="$exports, \"./$sub\": \"./index.js\""; done
  echo "{ \"name\": \"$1\", \"type\": \"module\", \"exports\": $exports } }" > "$dir/package.json"
  : > "$dir/index.js"
  for name in $3; do
    echo "export class $name { constructor() { throw new Error('$1 is a stub (bench/x402-e2e/run.sh): this chain is not run'); } static fromPrivateKey() { return new $name(); } static formatPrivateKey() { return new $name(); } }" >> "$dir/index.js"
  done
  echo "export const PrivateKeyVariants = {}; export function createEd25519Signer() { throw new Error('stub'); } export function toClientAvmSigner() { throw new Error('stub'); }" >> "$dir/index.js"
}
stub @x402/aptos "exact/client exact/server" "ExactAptosScheme"
stub @x402/stellar "exact/client exact/server" "ExactStellarScheme Ed25519Signer"
stub @x402/avm "exact/client exact/server" "ExactAvmScheme"
stub @aptos-labs/ts-sdk "" "Account Ed25519PrivateKey PrivateKey"

# 4. The run: anvil as base, the gateway, a facilitator entry adding the merchant's key, their server and client.
cd "$root"
SVC_X402_E2E_DIR="$work" npx vitest run test/x402/coinbaseE2e.anvil.test.ts
