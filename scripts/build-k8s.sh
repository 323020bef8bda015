#!/usr/bin/env bash
# Builds the binaries egress's Kubernetes tests run (etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, kwok, pulumi-resource-kubernetes) from the Go modules in tools/k8s into a machine-wide
# cache, and prints the cache's bin directory as the last line of stdout.
#
# The cache directory is keyed by a digest of tools/k8s's go.mod/go.sum/*.go files and versions.env, so
# every worktree and clone with the same sources shares one build (cold ~11 min on 2 cores, then instant).
# Concurrency-safe: builders of one key take a lock (flock) and the second finds the work done. A killed
# build leaves no binary that looks done: each is written to a temporary name and renamed into place,
# and the directory counts as complete only once `complete` is written after all of them.
#
# Env: EGRESS_K8S_CACHE (default /var/cache/egress-k8s, else ~/.cache/egress-k8s when that is not
# writable), EGRESS_K8S_BUILD_P (go build -p; default 2).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SRC="$ROOT/tools/k8s"
log() { printf '[build-k8s] %s\n' "$*" >&2; }
die() { printf '[build-k8s] error: %s\n' "$*" >&2; exit 1; }

command -v go >/dev/null || die "Go >= 1.26 is needed to build the Kubernetes test binaries (https://go.dev/dl)"
command -v flock >/dev/null || die "flock (util-linux) is needed to build concurrently-safely"
# shellcheck source=/dev/null
. "$SRC/versions.env"
: "${KUBE_VERSION:?} ${PROVIDER_VERSION:?}"

cache_root() {
  if [ -n "${EGRESS_K8S_CACHE:-}" ]; then echo "$EGRESS_K8S_CACHE"; return; fi
  if mkdir -p /var/cache/egress-k8s 2>/dev/null && [ -w /var/cache/egress-k8s ]; then
    echo /var/cache/egress-k8s
  else
    echo "${XDG_CACHE_HOME:-$HOME/.cache}/egress-k8s"
  fi
}
KEY="$(cd "$SRC" && find . -type f \( -name go.mod -o -name go.sum -o -name '*.go' -o -name versions.env \) |
  LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-16)"
DIR="$(cache_root)/$KEY"
BIN="$DIR/bin"
mkdir -p "$BIN" || die "cannot create $BIN"

if [ -f "$DIR/complete" ]; then
  log "cached in $DIR"
  echo "$BIN"
  exit 0
fi

exec 9>"$DIR/lock"
if ! flock -n 9; then
  log "another build of $KEY is running; waiting for it"
  flock 9
fi
if [ -f "$DIR/complete" ]; then
  log "built by another process in $DIR"
  echo "$BIN"
  exit 0
fi

P="${EGRESS_K8S_BUILD_P:-2}"
export GOFLAGS="-mod=readonly -buildvcs=false"
# module_dir <module dir> <module path>: where the module cache holds that module's source. `go list -m
# -f '{{.Dir}}'` prints an empty line for a module not downloaded yet (a new machine's empty cache), so
# download it first, and refuse an empty or missing directory instead of reading "/<path>".
module_dir() {
  local mod="$1" path="$2" dir
  (cd "$SRC/$mod" && go mod download "$path") || die "downloading $path (tools/k8s/$mod) failed"
  dir="$(cd "$SRC/$mod" && go list -m -f '{{.Dir}}' "$path")" || die "go list -m $path failed in tools/k8s/$mod"
  [ -n "$dir" ] && [ -d "$dir" ] || die "the module cache has no source for $path (tools/k8s/$mod): got '$dir'"
  echo "$dir"
}
# build <name> <module dir> <package> [ldflags]: skips a binary a previous (killed) run finished.
build() {
  local name="$1" mod="$2" pkg="$3" ldflags="${4:-}" start
  if [ -x "$BIN/$name" ]; then log "$name already built"; return; fi
  log "building $name (go build -p $P in tools/k8s/$mod)"
  start=$(date +%s)
  rm -f "$BIN/$name.tmp"
  if ! (cd "$SRC/$mod" && go build -p "$P" -trimpath -ldflags "-s -w $ldflags" -o "$BIN/$name.tmp" "$pkg"); then
    rm -f "$BIN/$name.tmp"
    die "building $name failed (see above)"
  fi
  mv -f "$BIN/$name.tmp" "$BIN/$name"
  log "built $name in $(( $(date +%s) - start ))s ($(du -m "$BIN/$name" | cut -f1) MB)"
}

total=$(date +%s)
build etcd etcd .
minor="${KUBE_VERSION#v1.}"; minor="${minor%%.*}"
V=k8s.io/component-base/version
KUBE_LDFLAGS="-X $V.gitVersion=$KUBE_VERSION -X $V.gitMajor=1 -X $V.gitMinor=$minor -X $V.gitTreeState=clean"
KUBE_LDFLAGS="$KUBE_LDFLAGS -X k8s.io/client-go/pkg/version.gitVersion=$KUBE_VERSION"
for c in kube-apiserver kube-controller-manager kube-scheduler; do build "$c" kube "./$c" "$KUBE_LDFLAGS"; done
build kwok kwok sigs.k8s.io/kwok/cmd/kwok
# kwok simulates nothing without Stage configs; its module ships the "fast" node and pod stages.
KWOK_DIR="$(module_dir kwok sigs.k8s.io/kwok)"
mkdir -p "$DIR/kwok-stages"
for s in node/fast/node-initialize pod/fast/pod-ready pod/fast/pod-complete pod/fast/pod-delete; do
  cp "$KWOK_DIR/kustomize/stage/$s.yaml" "$DIR/kwok-stages/$(basename "$s").yaml" || die "kwok stage $s missing"
done
if [ ! -x "$BIN/pulumi-resource-kubernetes" ]; then
  upstream="$(module_dir provider github.com/pulumi/pulumi-kubernetes/provider/v4)"
  (cd "$SRC/provider" && go run ./genembed "$upstream/cmd/pulumi-resource-kubernetes" "$PROVIDER_VERSION") ||
    die "writing the provider's embedded schema failed"
fi
build pulumi-resource-kubernetes provider . \
  "-X github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version=$PROVIDER_VERSION"

got="$("$BIN/kube-apiserver" --version 2>&1)"
[ "$got" = "Kubernetes $KUBE_VERSION" ] || die "kube-apiserver reports '$got', want 'Kubernetes $KUBE_VERSION'"
date -u +%FT%TZ > "$DIR/complete"
log "all built in $(( $(date +%s) - total ))s into $DIR"
echo "$BIN"
