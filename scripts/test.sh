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

status=0 passed=0 failed=0
pre="$(mktemp -d)"
trap 'rm -rf "$pre"' EXIT
touch "$pre/summary"

# The machine-wide builds the last suites need (the Kubernetes binaries, ~11 min cold; the real guest's
# image, ~1.5 min) start now at the lowest CPU priority, so they use the time the earlier suites spend
# waiting on engines and sockets instead of adding theirs to the run. Both are cached and flock'ed: their
# suites, and the tests' own calls, wait for the same build; a warm machine finds them done at once.
prebuild() { # prebuild <name> <script>: runs it in the background, its log in $pre/<name>.log
  ( s=$(date +%s); rc=0; nice -n 19 bash "$2" >"$pre/$1.log" 2>&1 || rc=$?; echo "$rc $(( $(date +%s) - s ))" >"$pre/$1.rc" ) &
}
# prebuilt <name> <what>: waits for it (from any subshell: it watches for the .rc file); on failure prints
# its log's tail and marks the run failed.
prebuilt() {
  while [ ! -f "$pre/$1.rc" ]; do sleep 1; done
  local rc secs; read -r rc secs <"$pre/$1.rc"
  echo "$2: ${secs}s in the background (exit $rc)" >>"$pre/summary"
  if [ "$rc" != 0 ]; then echo "$2 failed:" >&2; tail -20 "$pre/$1.log" >&2; touch "$pre/$1.failed"; return 1; fi
}
[ -d dist/test/kubernetes ] && prebuild k8s scripts/build-k8s.sh
[ -d dist/test/kvm ] && prebuild guest scripts/build-guest-image.sh

# files <suite>...: the suites' compiled test files; those listed in test/slow-first.txt first, in its order.
files() {
  local all listed
  all=$(for s in "$@"; do [ -d "dist/test/$s" ] && find "dist/test/$s" -name '*.test.js'; done | sort)
  listed=$(grep -v '^#' test/slow-first.txt | sed 's|^test/|dist/test/|; s|\.ts$|.js|' | grep -Fx -f <(echo "$all") || true)
  printf '%s\n' "$listed"
  grep -Fvx -f <(echo "$listed") <<<"$all" || true
}

# run <title> <jobs> <log> <files...>: one `node --test` over the files, its output in <log>. Records its
# summary line in $pre/summary and its counts in <log>.counts; a failure leaves <log>.failed.
run() {
  local title=$1 jobs=$2 log=$3 start p f c line
  shift 3
  start=$(date +%s)
  # A file that hangs, or whose process stays alive after its tests (exit-watch.cjs names what holds it),
  # fails on its own instead of holding the run until CI's limit (docs/decisions/0099-a-file-that-does-not-exit.md).
  node --test ${UNIT_GUARD:+--import ./scripts/unit-guard.mjs} --require ./scripts/exit-watch.cjs \
    --test-timeout="${EGRESS_TEST_FILE_TIMEOUT_MS:-900000}" --test-concurrency="$jobs" --test-reporter=spec --test-reporter-destination=stdout \
    --test-reporter=./scripts/test-times.mjs --test-reporter-destination="$log.times" "$@" >>"$log" 2>&1 ||
    touch "$log.failed"
  # A cancelled test (its file died or hung, a hook threw) did not pass: it counts as failed.
  p=$(sed -n 's/^ℹ pass \([0-9]*\)$/\1/p' "$log" | tail -1); f=$(sed -n 's/^ℹ fail \([0-9]*\)$/\1/p' "$log" | tail -1)
  c=$(sed -n 's/^ℹ cancelled \([0-9]*\)$/\1/p' "$log" | tail -1)
  f=$(( ${f:-0} + ${c:-0} ))
  [ -n "$p" ] || { echo "$title printed no summary" >>"$log"; touch "$log.failed"; }
  echo "${p:-0} $f" >"$log.counts"
  line="$title: ${p:-?} passed, $f failed (${c:-0} of them cancelled) in $(( $(date +%s) - start ))s"
  echo "$line" >>"$pre/summary"
  echo "== $line" >>"$log"
}

# suite <title> <jobs> <suite>...: runs the suites' files as one queue, its output shown as it comes.
suite() {
  local title=$1 jobs=$2 log pid
  shift 2
  log="$pre/$(echo "$title" | tr -c 'a-z0-9' '-').log"
  : >"$log"
  echo "== $title"
  # shellcheck disable=SC2046 # one argument per file; test file names have no spaces
  run "$title" "$jobs" "$log" $(files "$@") &
  pid=$!
  tail -n +1 --pid="$pid" -f "$log" || true
  wait "$pid" || true
}

# Files at once. node's default is one less than the cores, so on 2 cores every file ran alone and a file
# waiting on probes, timers and engines left the machine half idle (docs/decisions/0067-test-parallel.md).
# Each file owns its ports, homes, stacks and servers, so files do not see each other.
# EGRESS_TEST_CONCURRENCY overrides it for unit, e2e and service.
#
# e2e and service are one queue (docs/decisions/0093-ci-time.md). One after the other, each ended on a
# tail of its longest files running alone; as one queue, the longest of both start first
# (test/slow-first.txt) and the short ones fill the slots around them.
# A unit test starts no process and opens no socket (scripts/unit-guard.mjs refuses both): those that must
# are test/integration's, which joins the e2e and service queue (docs/decisions/0097-unit-means-no-io.md).
UNIT_GUARD=1 suite "test/unit" "${EGRESS_TEST_CONCURRENCY:-2}" unit
suite "test/integration + test/e2e + test/service" "${EGRESS_TEST_CONCURRENCY:-3}" integration e2e service

# kvm runs beside ui and kubernetes, which start heavy servers of their own (a browser, a control plane)
# and run one file at a time. kvm's files run one at a time too (a TCG guest booting in one file starved
# the real guest's vol-upload in another until libvirtd dropped it on its keepalive timeout), under the
# machine's libvirt sandbox lock: a developer's worktree running its own kvm suite goes first, whole. Its
# output is shown when it ends.
kvm_pid=""
if [ -d dist/test/kvm ]; then
  (
    prebuilt guest "guest image (scripts/build-guest-image.sh)" || exit 0
    exec 8>"${EGRESS_KVM_TEST_LOCK:-/tmp/egress-kvm-tests.lock}"
    flock 8
    # shellcheck disable=SC2046
    run "test/kvm" 1 "$pre/kvm.log" $(files kvm)
  ) &
  kvm_pid=$!
  echo "== test/kvm started beside test/ui and test/kubernetes (its output follows when it ends)"
fi
suite "test/ui" 1 ui
if [ -d dist/test/kubernetes ]; then
  prebuilt k8s "kubernetes binaries (scripts/build-k8s.sh)" || true
  suite "test/kubernetes" 1 kubernetes
fi
if [ -n "$kvm_pid" ]; then
  wait "$kvm_pid" || true
  echo "== test/kvm"
  cat "$pre/kvm.log" 2>/dev/null || echo "test/kvm did not run"
fi

for counts in "$pre"/*.counts; do
  [ -f "$counts" ] || continue
  read -r p f <"$counts"
  passed=$((passed + p)) failed=$((failed + f))
done
if compgen -G "$pre/*.failed" >/dev/null; then status=1; fi
# The slowest files of the run (scripts/test-times.mjs): what test/slow-first.txt should list.
echo "== the 25 slowest test files"
cat "$pre"/*.times 2>/dev/null | sort -rn | head -25
printf '== suites\n'
sed 's/^/  /' "$pre/summary"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ] || status=1
exit $status
