#!/usr/bin/env bash
# Runs every test with node's built-in runner on the compiled output (run scripts/setup.sh first; `npm test`
# does both). Installs the Debian packages the libvirt tests need when they are missing. A missing part is
# a failure, never a skip.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
if [ -x scripts/install-test-deps.sh ]; then bash scripts/install-test-deps.sh; fi

# Suites in order of cost; each directory runs as one `node --test` so a failure names its suite.
status=0
for suite in unit e2e service kvm; do
  [ -d "dist/test/$suite" ] || continue
  files=$(find "dist/test/$suite" -name '*.test.js' | sort)
  [ -n "$files" ] || continue
  echo "== test/$suite"
  # shellcheck disable=SC2086
  node --test --test-reporter=spec $files || status=1
done
exit $status
