#!/usr/bin/env bash
# Runs a command in a private network namespace that holds only loopback, so that browser
# tests can neither reach nor pick any other interface (Chromium pairs 127.0.0.1 with
# 127.0.0.1 there). Where unshare is not permitted it runs in the host namespace and says
# so; the e2e tests assert from getStats() that every ICE pair is loopback either way.
set -euo pipefail
if unshare -n true 2>/dev/null; then
    exec unshare -n sh -c 'ip link set lo up && exec "$@"' sh "$@"
fi
echo "netns: unshare -n is not permitted here; running in the host network namespace" >&2
exec "$@"
