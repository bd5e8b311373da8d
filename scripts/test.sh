#!/usr/bin/env bash
# The README's test command: installs what it needs and builds (each only when something changed),
# makes sure Postgres and Redis run, then runs every test against them. Prints a last line
# "N passed, N failed".
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ensure-pnpm.sh
source scripts/ensure-services.sh
source scripts/ensure-chromium.sh
source scripts/ensure-kubectl.sh
source scripts/ensure-promtool.sh
source scripts/ensure-built.sh

mkdir -p .ci/out
status=0
pnpm_ exec vitest run --reporter=default --reporter=json --outputFile.json=.ci/out/vitest.json "$@" || status=$?
node -e '
  const r = JSON.parse(require("fs").readFileSync(".ci/out/vitest.json", "utf8"));
  const failed = r.numFailedTests + (r.numFailedTestSuites || 0) - 0;
  console.log(`${r.numPassedTests} passed, ${r.numFailedTests} failed`);
' || echo "0 passed, 1 failed"
exit $status
