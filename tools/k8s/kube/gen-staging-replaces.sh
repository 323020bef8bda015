#!/usr/bin/env bash
# Writes into kube/go.mod one `replace k8s.io/<x> => k8s.io/<x> v0.<minor>.<patch>` per staging module
# that k8s.io/kubernetes' own go.mod replaces with `./staging/...` (those paths do not exist in the module
# download, so a module that requires k8s.io/kubernetes must point them at the published versions).
# The list is read from kubernetes' go.mod, never typed. Run after changing KUBE_VERSION; then `go mod tidy`.
set -euo pipefail
DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
KUBE_VERSION="${KUBE_VERSION:-v1.34.2}"
STAGING_VERSION="v0.${KUBE_VERSION#v1.}"
cd "$DIR"
MOD="$(go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/^\s*"GoMod": "\(.*\)",$/\1/p')"
[ -f "$MOD" ] || { echo "error: no go.mod for k8s.io/kubernetes@$KUBE_VERSION" >&2; exit 1; }
mods="$(sed -n 's#^\s*\(k8s\.io/[a-z0-9-]*\) => \./staging/src/.*#\1#p' "$MOD")"
n=$(printf '%s\n' "$mods" | grep -c .)
[ "$n" -gt 20 ] || { echo "error: found only $n staging modules in $MOD; its layout changed" >&2; exit 1; }
args=()
for m in $mods; do args+=(-replace "$m=$m@$STAGING_VERSION"); done
go mod edit "${args[@]}" -require "k8s.io/kubernetes@$KUBE_VERSION" -require "k8s.io/component-base@$STAGING_VERSION"
echo "replaced $n staging modules with $STAGING_VERSION (from $MOD)" >&2
