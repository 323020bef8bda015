#!/usr/bin/env bash
# Builds egress-supervise (tools/supervise) into .egress/bin: the small process that sits between egress
# and the Pulumi CLI so engine processes die with egress (docs/engine.md). Rebuilt only when missing or
# older than its sources, so a repeated setup costs one `find`.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="$ROOT/.egress/bin"
OUT="$BIN/egress-supervise"
SRC="$ROOT/tools/supervise"
log() { printf '[build-supervisor] %s\n' "$*" >&2; }
mkdir -p "$BIN"

if [ -x "$OUT" ] && [ -z "$(find "$SRC" -newer "$OUT" -type f -print -quit)" ]; then
  log "egress-supervise present in .egress/bin"
  exit 0
fi
if ! command -v go >/dev/null; then
  # Not fatal, like the language host: the engine still runs, but a SIGKILLed egress leaves the Pulumi
  # CLI and its plugins running (and test/unit/supervise.test.ts fails loudly).
  echo "warning: no Go: egress-supervise not built; engine processes will outlive a killed egress." >&2
  echo "         Install Go >= 1.21 from https://go.dev/dl and run setup again." >&2
  exit 0
fi
log "building egress-supervise (tools/supervise)"
if ! (cd "$SRC" && go build -trimpath -buildvcs=false -o "$OUT.tmp" .); then
  rm -f "$OUT.tmp"
  echo "error: building tools/supervise failed (see above)." >&2
  exit 1
fi
mv "$OUT.tmp" "$OUT"
