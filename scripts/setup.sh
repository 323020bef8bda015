#!/usr/bin/env bash
# Sets the project up on a fresh machine: npm packages, TypeScript build, the Pulumi CLI (built from Go
# modules when no suitable one exists), the dynamic-provider plugin on the engine's PATH, and
# egress-supervise (which makes engine processes die with egress).
# Idempotent: a second run does only what is missing.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
log() { printf '[setup] %s\n' "$*" >&2; }

if [ ! -d node_modules/@pulumi/pulumi ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  log "installing npm packages"
  npm ci --no-audit --no-fund --loglevel=error
fi

log "building TypeScript"
node scripts/prune-dist.mjs
npx tsc -p tsconfig.json
log "building the dashboard"
node scripts/build-ui.mjs

bash scripts/build-pulumi.sh
bash scripts/build-supervisor.sh
