#!/usr/bin/env bash
# Provides the Pulumi CLI in .egress/bin without downloads from get.pulumi.com: uses a `pulumi` of the
# wanted version if one is on PATH, else builds github.com/pulumi/pulumi/pkg/v3/cmd/pulumi from the Go
# module proxy (tools/pulumi pins the version). Also builds egress's minimal Node.js language host
# (tools/language-nodejs, for plain `pulumi up`) and links the dynamic-provider plugin next to it.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="$ROOT/.egress/bin"
VERSION="$(sed -n 's#^\s*github.com/pulumi/pulumi/pkg/v3 \(v[0-9.]*\).*#\1#p' "$ROOT/tools/pulumi/go.mod" | head -1)"
log() { printf '[build-pulumi] %s\n' "$*" >&2; }
mkdir -p "$BIN"

have_version() { [ -x "$1" ] && [ "$("$1" version 2>/dev/null)" = "$VERSION" ]; }
# A pulumi we built carries a stamp of how (scripts/pulumi-lazy-modules.sh); one linked from PATH does not.
STAMP="$BIN/pulumi.stamp"
built_here() { [ -L "$BIN/pulumi" ] || [ "$(cat "$STAMP" 2>/dev/null)" = "$(bash "$ROOT/scripts/pulumi-lazy-modules.sh" --digest)" ]; }

if have_version "$BIN/pulumi" && { ! command -v go >/dev/null || built_here; }; then
  log "pulumi $VERSION present in .egress/bin"
elif command -v pulumi >/dev/null && have_version "$(command -v pulumi)" &&
  [ "$(readlink -f "$(command -v pulumi)")" != "$(readlink -f "$BIN/pulumi")" ]; then
  log "using pulumi $VERSION from PATH ($(command -v pulumi))"
  ln -sf "$(command -v pulumi)" "$BIN/pulumi"
else
  if ! command -v go >/dev/null; then
    echo "error: the Pulumi CLI $VERSION is needed and cannot be downloaded here." >&2
    echo "       Install Go >= 1.21 from https://go.dev/dl (it fetches the Go 1.25 toolchain tools/*/go.mod need from the module proxy; Debian 12's golang-go is 1.19, too old) so setup can build it," >&2
    echo "       or put pulumi $VERSION on PATH." >&2
    exit 3
  fi
  log "building pulumi $VERSION from Go modules (cold: ~3 min on 2 cores; cached afterwards)"
  start=$(date +%s)
  modfile="$(bash "$ROOT/scripts/pulumi-lazy-modules.sh" "$ROOT/.egress/build/pulumi-modules")"
  (cd "$ROOT/tools/pulumi" && go build -trimpath -modfile="$modfile" \
      -ldflags "-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$VERSION" \
      -o "$BIN/pulumi.tmp" github.com/pulumi/pulumi/pkg/v3/cmd/pulumi)
  rm -f "$BIN/pulumi" && mv "$BIN/pulumi.tmp" "$BIN/pulumi"
  bash "$ROOT/scripts/pulumi-lazy-modules.sh" --digest >"$STAMP"
  log "built in $(( $(date +%s) - start ))s"
fi

# The language host for plain `pulumi up` (the real one's Go module is not served here). Rebuilt when
# missing, of another version, or older than its sources; a failed build fails setup.
LANG_HOST="$BIN/pulumi-language-nodejs"
LANG_SRC="$ROOT/tools/language-nodejs"
lang_host_current() {
  [ -x "$LANG_HOST" ] && [ "$("$LANG_HOST" -version 2>/dev/null)" = "${VERSION#v}" ] &&
    [ -z "$(find "$LANG_SRC" -newer "$LANG_HOST" -type f -print -quit)" ]
}
real_host() { # a real Pulumi install ships its language host next to `pulumi`
  local p; p="$(command -v pulumi-language-nodejs 2>/dev/null || true)"
  [ -n "$p" ] && [ "$p" != "$LANG_HOST" ] && [ "$(readlink -f "$p")" != "$(readlink -f "$LANG_HOST")" ] && echo "$p"
}
if lang_host_current; then
  log "pulumi-language-nodejs ${VERSION#v} present in .egress/bin"
elif ! command -v go >/dev/null && [ -n "$(real_host)" ]; then
  log "using pulumi-language-nodejs from PATH ($(real_host))"
  ln -sf "$(real_host)" "$LANG_HOST"
elif ! command -v go >/dev/null; then
  # Not fatal: egress up/serve host the Node runtime in-process and need no language plugin. Plain
  # `pulumi up` (and test/e2e/pulumi-up.test.ts, which then fails loudly) does.
  echo "warning: no Go and no pulumi-language-nodejs on PATH: plain \`pulumi up\` will not work (egress up will)." >&2
  echo "         Install Go >= 1.21 from https://go.dev/dl (it fetches the Go 1.25 toolchain tools/*/go.mod need from the module proxy; Debian 12's golang-go is 1.19, too old) to build egress's own." >&2
else
  log "building pulumi-language-nodejs (tools/language-nodejs)"
  start=$(date +%s)
  if ! (cd "$LANG_SRC" && go build -trimpath -ldflags "-X main.version=${VERSION#v}" -o "$LANG_HOST.tmp" .); then
    rm -f "$LANG_HOST.tmp"
    echo "error: building tools/language-nodejs failed (see above); plain \`pulumi up\` would not work." >&2
    exit 1
  fi
  mv "$LANG_HOST.tmp" "$LANG_HOST"
  log "built pulumi-language-nodejs in $(( $(date +%s) - start ))s"
fi

# The engine looks for provider plugins on PATH and next to the pulumi binary. egress's launcher of the
# dynamic-provider host (scripts/pulumi-resource-pulumi-nodejs: the SDK's, minus two start-up costs).
ln -sf "$ROOT/scripts/pulumi-resource-pulumi-nodejs" "$BIN/pulumi-resource-pulumi-nodejs"
