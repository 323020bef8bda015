#!/usr/bin/env bash
# Builds egress-supervise (tools/supervise) into .egress/bin: the small process that sits between egress
# and the Pulumi CLI so engine processes die with egress (docs/engine.md). Rebuilt only when missing or
# built from other sources (a digest of tools/supervise is kept next to the binary), so a repeated setup
# costs one sha256sum.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="$ROOT/.egress/bin"
OUT="$BIN/egress-supervise"
SRC="$ROOT/tools/supervise"
log() { printf '[build-supervisor] %s\n' "$*" >&2; }
mkdir -p "$BIN"

DIGEST="$(cd "$SRC" && find . -type f | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -d' ' -f1)"
if [ -x "$OUT" ] && [ "$(cat "$OUT.sha256" 2>/dev/null)" = "$DIGEST" ]; then
  log "egress-supervise present in .egress/bin"
  exit 0
fi
if ! command -v go >/dev/null; then
  # Fatal, like the Pulumi CLI build: egress runs no engine without its supervisor (src/engine/supervised.ts).
  echo "error: Go >= 1.21 is needed to build egress-supervise; install it from https://go.dev/dl and run setup again." >&2
  exit 3
fi
log "building egress-supervise (tools/supervise)"
if ! (cd "$SRC" && go build -trimpath -buildvcs=false -o "$OUT.tmp" .); then
  rm -f "$OUT.tmp"
  echo "error: building tools/supervise failed (see above)." >&2
  exit 1
fi
mv "$OUT.tmp" "$OUT"
echo "$DIGEST" > "$OUT.sha256"
