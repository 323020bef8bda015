#!/usr/bin/env bash
# Provides the Pulumi CLI in .egress/bin without downloads from get.pulumi.com: uses a `pulumi` of the
# wanted version if one is on PATH, else builds github.com/pulumi/pulumi/pkg/v3/cmd/pulumi from the Go
# module proxy (tools/pulumi pins the version). Also links the dynamic-provider plugin next to it.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="$ROOT/.egress/bin"
VERSION="$(sed -n 's#^\s*github.com/pulumi/pulumi/pkg/v3 \(v[0-9.]*\).*#\1#p' "$ROOT/tools/pulumi/go.mod" | head -1)"
log() { printf '[build-pulumi] %s\n' "$*" >&2; }
mkdir -p "$BIN"

have_version() { [ -x "$1" ] && [ "$("$1" version 2>/dev/null)" = "$VERSION" ]; }

if have_version "$BIN/pulumi"; then
  log "pulumi $VERSION present in .egress/bin"
elif command -v pulumi >/dev/null && have_version "$(command -v pulumi)"; then
  log "using pulumi $VERSION from PATH ($(command -v pulumi))"
  ln -sf "$(command -v pulumi)" "$BIN/pulumi"
else
  if ! command -v go >/dev/null; then
    echo "error: the Pulumi CLI $VERSION is needed and cannot be downloaded here." >&2
    echo "       Install Go >= 1.24 (https://go.dev/doc/install, or: apt-get install golang-go) so setup can build it," >&2
    echo "       or put pulumi $VERSION on PATH." >&2
    exit 3
  fi
  log "building pulumi $VERSION from Go modules (cold: ~3 min on 2 cores; cached afterwards)"
  start=$(date +%s)
  (cd "$ROOT/tools/pulumi" && go build -trimpath \
      -ldflags "-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$VERSION" \
      -o "$BIN/pulumi.tmp" github.com/pulumi/pulumi/pkg/v3/cmd/pulumi)
  mv "$BIN/pulumi.tmp" "$BIN/pulumi"
  log "built in $(( $(date +%s) - start ))s"
fi

# The engine looks for provider plugins on PATH and next to the pulumi binary.
ln -sf "$ROOT/node_modules/@pulumi/pulumi/pulumi-resource-pulumi-nodejs" "$BIN/pulumi-resource-pulumi-nodejs"
chmod +x "$ROOT/node_modules/@pulumi/pulumi/pulumi-resource-pulumi-nodejs"
