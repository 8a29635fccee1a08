#!/usr/bin/env bash
# `make test-rust`: the workspace's tests. Many of them mostly wait (real-time streams,
# emulated links, a hundred fetch processes), so the optimised build the e2e suite needs next
# (`make native`) runs meanwhile at the lowest CPU priority, taking only what the tests leave.
set -uo pipefail
cd "$(dirname "$0")/.."
cargo=${CARGO:-cargo}
# The same flags in scripts/bench-native.mjs (TEST_BUILD) and crates/ppspp-cli/tests/wan.rs
# (signal_bin), so that their builds find this one fresh. `ppspp-wasm/bench` builds the
# verification benchmark's example, which the bench smoke runs.
features=(--workspace --locked --features ppspp-cli/webrtc-rs,ppspp-wasm/bench)

"$cargo" test "${features[@]}" --no-run || exit 1

mkdir -p target
log=target/native-build.log
setsid nice -n 19 make --no-print-directory native CARGO="$cargo" >"$log" 2>&1 &
build=$!
trap 'kill -- -"$build" 2>/dev/null' EXIT

"$cargo" test "${features[@]}"
tests=$?

wait "$build"
built=$?
trap - EXIT
if [ "$built" -ne 0 ]; then
  echo "test-rust: the optimised build (make native) failed:" >&2
  tail -n 60 "$log" >&2
  exit 1
fi
echo "test-rust: make native built alongside (log: $log)"
exit "$tests"
