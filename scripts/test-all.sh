#!/usr/bin/env bash
# `make test` after the setup: every check, in order. The optimised build that the e2e suite
# and the bench smoke need (`make native`), then the videos and ladders the e2e suite plays
# (`make e2e-media`, which needs the build), wait on nothing else, so they start first at
# the lowest CPU priority and take what the lint, the test build and the Rust tests leave
# (the builds' serial stretches, the tests' waits); the e2e suite waits for them.
set -uo pipefail
cd "$(dirname "$0")/.."
make=${MAKE:-make}
cargo=${CARGO:-cargo}
mkdir -p target
log=target/background-build.log
started=$(date +%s)
rm -f target/background-build.end
# A process group of its own (job control), to be stopped whole, but not a session of its
# own: with the kernel's autogroups each session gets an equal share of the CPU whatever
# its nice value, and the build would take half the machine from the lint and the tests.
set -m
(
  nice -n 19 "$make" --no-print-directory e2e-media CARGO="$cargo"
  status=$?
  date +%s >target/background-build.end
  exit "$status"
) </dev/null >"$log" 2>&1 &
build=$!
set +m
trap 'kill -- -"$build" 2>/dev/null' EXIT

"$make" --no-print-directory lint test-rust test-fuzz-build test-web CARGO="$cargo" || exit 1

checked=$(date +%s)
wait "$build"
built=$?
trap - EXIT
if [ "$built" -ne 0 ]; then
  echo "make test: the optimised build or the e2e media (make e2e-media) failed:" >&2
  tail -n 60 "$log" >&2
  exit 1
fi
# When each side ended tells which of them holds `make test` before the e2e suite.
ended=$(cat target/background-build.end 2>/dev/null || date +%s)
echo "make test: the checks took $((checked - started)) s; make native and make e2e-media," \
  "alongside, $((ended - started)) s (log: $log)"

"$make" --no-print-directory test-e2e bench-smoke CARGO="$cargo" || exit 1
echo "make test: all checks passed"
