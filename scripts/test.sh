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

# Suites in order of cost; each directory runs as one `node --test` so a failure names its suite.
status=0 passed=0 failed=0 summary=""
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
for suite in unit e2e service ui kubernetes kvm; do
  [ -d "dist/test/$suite" ] || continue
  files=$(find "dist/test/$suite" -name '*.test.js' | sort)
  [ -n "$files" ] || continue
  echo "== test/$suite"
  # The real Kubernetes binaries, built once per machine (~11 min cold); the tests build them too when
  # run on their own, but here the build's progress shows before the suite's clock starts.
  if [ "$suite" = kubernetes ]; then
    kstart=$(date +%s)
    bash scripts/build-k8s.sh >/dev/null || { echo "scripts/build-k8s.sh failed" >&2; status=1; }
    summary="$summary  kubernetes binaries (scripts/build-k8s.sh): $(( $(date +%s) - kstart ))s"$'\n'
  fi
  start=$(date +%s)
  # shellcheck disable=SC2086
  node --test --test-reporter=spec $files 2>&1 | tee "$out" || status=1
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
