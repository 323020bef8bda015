#!/usr/bin/env bash
# Prepares the Go modules the Pulumi CLI is built with (scripts/build-pulumi.sh) so that its start-up does
# not load password dictionaries. Two copies of zxcvbn-go (pulumi's `config set` and esc's `env set` ask it
# whether a value looks like a secret) decode their word lists in Go `init`: 125 of the 240 ms every
# `pulumi` command spent in init, paid by each engine run egress starts (`pulumi version`, `stack select`,
# `up`, ...). Here each copy is taken from the module cache and its lists load on first use instead
# (sync.Once); the answers are the same. Nothing in tools/pulumi changes: the build reads a copy of its
# go.mod with `replace` lines (go build -modfile).
#
# Usage: pulumi-lazy-modules.sh <work dir>   prints the modfile to build with
#        pulumi-lazy-modules.sh --digest      prints what a built binary's stamp must hold
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MODDIR="$ROOT/tools/pulumi"
MODULES=(github.com/nbutton23/zxcvbn-go github.com/ccojocar/zxcvbn-go)

if [ "${1:-}" = "--digest" ]; then
  cat "$0" "$MODDIR/go.mod" | sha256sum | cut -d' ' -f1
  exit 0
fi
WORK="${1:?usage: pulumi-lazy-modules.sh <work dir>}"
rm -rf "$WORK" && mkdir -p "$WORK"
cp "$MODDIR/go.mod" "$MODDIR/go.sum" "$WORK/"

# Applies a perl substitution to a file and fails the build when it matched nothing (a new upstream).
edit() {
  local file="$1" expr="$2"
  perl -0pi -e "\$n += ($expr); END { exit(\$n ? 0 : 1) }" "$file" ||
    { echo "error: $file no longer has what $expr expects; update scripts/pulumi-lazy-modules.sh" >&2; exit 1; }
}

for mod in "${MODULES[@]}"; do
  version="$(cd "$MODDIR" && go list -m -f '{{.Version}}' "$mod")"
  src="$(cd "$MODDIR" && go mod download -json "$mod@$version" | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')"
  dst="$WORK/${mod//\//_}"
  cp -r "$src" "$dst" && chmod -R u+w "$dst"
  [ -f "$dst/go.mod" ] || printf 'module %s\n\ngo 1.12\n' "$mod" >"$dst/go.mod"
  # frequency: the lists load in Load(), once, not in init.
  edit "$dst/frequency/frequency.go" 's/\n\t"log"\n/\n\t"log"\n\t"sync"\n/'
  edit "$dst/frequency/frequency.go" 's/\nfunc init\(\) \{/\nvar loadOnce sync.Once\n\n\/\/ Load reads the lists, once (egress: on first use rather than at start-up).\nfunc Load() { loadOnce.Do(load) }\n\nfunc load() {/'
  # matching: its matchers are built on the first Omnimatch, behind a sync.Once, after frequency.Load.
  edit "$dst/matching/matching.go" 's/\n\t"sort"\n/\n\t"sort"\n\t"sync"\n/'
  edit "$dst/matching/matching.go" 's/\nfunc init\(\) \{\n\tloadFrequencyList\(\)\n\}\n/\nvar loadOnce sync.Once\n/'
  edit "$dst/matching/matching.go" 's/if dictionaryMatchers == nil \|\| adjacencyGraphs == nil \{\n\t\tloadFrequencyList\(\)\n\t\}/loadOnce.Do(loadFrequencyList)/'
  edit "$dst/matching/matching.go" 's/\nfunc loadFrequencyList\(\) \{\n/\nfunc loadFrequencyList() {\n\tfrequency.Load()\n/'
  (cd "$WORK" && go mod edit -modfile=go.mod -replace="$mod=$dst")
done
echo "$WORK/go.mod"
