#!/usr/bin/env bash
# Runs every test with node's built-in runner on the compiled output (run scripts/setup.sh first; `npm test`
# does both). Installs the Debian packages the libvirt tests need when they are missing. A missing part is
# a failure, never a skip.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
if [ -x scripts/install-test-deps.sh ]; then
  bash scripts/install-test-deps.sh
  export EGRESS_TEST_DEPS_INSTALLED=1 # the libvirt sandbox setup then skips running it again
fi

# No internet here: the engine must not try to download provider plugins (egress leaves acquisition on for
# users, src/engine/env.ts; the test helpers set the same for a file run on its own).
export PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true

# Lint and format first (eslint.config.mjs, .prettierrc.json): a finding fails the run before any suite.
echo "== lint"
npm run --silent lint

# Suites in order of cost; each directory runs as one `node --test` so a failure names its suite.
status=0 passed=0 failed=0 summary=""
out="$(mktemp)"
pre="$(mktemp -d)"
trap 'rm -rf "$out" "$pre"' EXIT

# The machine-wide builds the last suites need (the Kubernetes binaries, ~11 min cold; the real guest's
# image, ~1.5 min) start now at the lowest CPU priority, so they use the time the earlier suites spend
# waiting on engines and sockets instead of adding theirs to the run. Both are cached and flock'ed: their
# suites, and the tests' own calls, wait for the same build; a warm machine finds them done at once.
prebuild() { # prebuild <name> <script>: runs it in the background, its log in $pre/<name>.log
  ( s=$(date +%s); rc=0; nice -n 19 bash "$2" >"$pre/$1.log" 2>&1 || rc=$?; echo "$rc $(( $(date +%s) - s ))" >"$pre/$1.rc" ) &
  echo $! >"$pre/$1.pid"
}
# prebuilt <name> <what>: waits for it; on failure prints its log's tail and fails the run.
prebuilt() {
  wait "$(cat "$pre/$1.pid")" || true
  local rc=died secs=?; [ -f "$pre/$1.rc" ] && read -r rc secs <"$pre/$1.rc"
  summary="$summary  $2: ${secs}s in the background (exit $rc)"$'\n'
  if [ "$rc" != 0 ]; then echo "$2 failed:" >&2; tail -20 "$pre/$1.log" >&2; status=1; fi
}
[ -d dist/test/kubernetes ] && prebuild k8s scripts/build-k8s.sh
[ -d dist/test/kvm ] && prebuild guest scripts/build-guest-image.sh

for suite in unit e2e service ui kubernetes kvm; do
  [ -d "dist/test/$suite" ] || continue
  files=$(find "dist/test/$suite" -name '*.test.js' | sort)
  [ -n "$files" ] || continue
  echo "== test/$suite"
  # The suite's clock starts once its machine-wide build is there (the tests would wait for it anyway).
  if [ "$suite" = kubernetes ]; then prebuilt k8s "kubernetes binaries (scripts/build-k8s.sh)"; fi
  if [ "$suite" = kvm ]; then prebuilt guest "guest image (scripts/build-guest-image.sh)"; fi
  start=$(date +%s)
  # One libvirt sandbox per machine: a kvm suite of another checkout on this machine (a developer's
  # worktree) goes first, whole. On CI nobody else holds the lock.
  # Its files also run one at a time: a TCG guest booting in one file starved the real guest's
  # vol-upload in another until libvirtd dropped it on its keepalive timeout.
  lock=()
  if [ "$suite" = kvm ]; then lock=(flock "${EGRESS_KVM_TEST_LOCK:-/tmp/egress-kvm-tests.lock}"); fi
  # Files at once. node's default is one less than the cores, so on 2 cores every file ran alone and a
  # file waiting on probes, timers and engines left the machine half idle: the service suite took 1782 s
  # alone and 1002 s three at a time, with the same results (docs/decisions/0067-test-parallel.md).
  # Each file owns its ports, homes, stacks and servers, so files do not see each other. kvm stays at one
  # (above); kubernetes and ui start heavy servers of their own (a control plane, a browser) and stay at one.
  # EGRESS_TEST_CONCURRENCY overrides it for every suite but kvm.
  case "$suite" in
    kvm) jobs=1 ;;
    e2e | service) jobs=${EGRESS_TEST_CONCURRENCY:-3} ;;
    unit) jobs=${EGRESS_TEST_CONCURRENCY:-2} ;;
    *) jobs=${EGRESS_TEST_CONCURRENCY:-1} ;;
  esac
  # shellcheck disable=SC2086
  "${lock[@]}" node --test --test-concurrency="$jobs" --test-reporter=spec $files 2>&1 | tee "$out" || status=1
  # A cancelled test (its file died or hung, a hook threw) did not pass: it counts as failed.
  p=$(sed -n 's/^ℹ pass \([0-9]*\)$/\1/p' "$out" | tail -1); f=$(sed -n 's/^ℹ fail \([0-9]*\)$/\1/p' "$out" | tail -1)
  c=$(sed -n 's/^ℹ cancelled \([0-9]*\)$/\1/p' "$out" | tail -1)
  f=$(( ${f:-0} + ${c:-0} ))
  passed=$((passed + ${p:-0})); failed=$((failed + f))
  [ -n "$p" ] || { echo "test/$suite printed no summary" >&2; status=1; }
  line="test/$suite: ${p:-?} passed, $f failed (${c:-0} of them cancelled) in $(( $(date +%s) - start ))s"
  echo "== $line"
  summary="$summary  $line"$'\n'
done
printf '== suites\n%s' "$summary"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ] || status=1
exit $status
