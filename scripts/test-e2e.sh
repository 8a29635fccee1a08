#!/usr/bin/env bash
# `make test-e2e`: the Playwright suite in a network namespace of loopback only, in two
# groups (e2e/playwright.config.ts): the tests that mostly wait on media time, three spec files
# at a time; then those tagged @alone (they need the machine to themselves), one at a time.
# Both groups run whatever the first gave; then what the failed tests saw and which failed,
# printed last. Arguments go to `playwright test` (a file, --grep).
set -uo pipefail
cd "$(dirname "$0")/.."
rm -f target/e2e/failures.log target/e2e/failed-tests.txt
status=0
# A file or --grep given may hold tests of one group only.
extra=()
[ "$#" -eq 0 ] || extra=(--pass-with-no-tests)
for group in shared alone; do
  echo "test-e2e: the $group group"
  (cd e2e && E2E_GROUP=$group PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 ../scripts/netns.sh npx playwright test "${extra[@]}" "$@") || status=1
done
if [ "$status" -ne 0 ]; then
  if [ -s target/e2e/failures.log ]; then
    echo '--- what the failed tests saw (target/e2e/failures.log) ---'
    tail -c 8000 target/e2e/failures.log
  fi
  if [ -s target/e2e/failed-tests.txt ]; then
    echo '--- failed e2e tests (target/e2e/failed-tests.txt) ---'
    tail -n 30 target/e2e/failed-tests.txt
  fi
fi
exit "$status"
