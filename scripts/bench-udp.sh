#!/usr/bin/env bash
# Native UDP on loopback: one seeder, one fetcher, a 100 MB random file, 1 KiB and 8 KiB
# chunks, RUNS runs each. Prints one line per run: MB/s, and CPU seconds and peak RSS of
# both processes (from /usr/bin/time -v). Usage: scripts/bench-udp.sh [RUNS] [MB]
set -euo pipefail
runs=${1:-3}
mb=${2:-100}
top=$(cd "$(dirname "$0")/.." && pwd)
# `make native`'s build (a no-op after it): `cargo build -p ppspp-cli` alone would unify the
# dependencies' features otherwise and build much of the release binary again.
make -s --no-print-directory -C "$top" native >&2
bin="$top/target/release/ppspp"
[ -x /usr/bin/time ] || { echo "bench-udp: needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
work=$(mktemp -d)
trap 'pkill -f "$work/src.bin" 2>/dev/null || true; rm -rf "$work"' EXIT
head -c $((mb * 1000 * 1000)) /dev/urandom > "$work/src.bin"
field() { grep -E "$1" "$2" | head -1 | awk -F': ' '{print $2}'; }
echo "chunk_size,run,mb_per_s,fetch_cpu_s,fetch_rss_kb,seed_cpu_s,seed_rss_kb"
for cs in 1024 8192; do
  for run in $(seq "$runs"); do
    rm -f "$work/uri" "$work/dst.bin"
    /usr/bin/time -v -o "$work/seed.time" "$bin" seed "$work/src.bin" --udp 127.0.0.1:0 --chunk-size "$cs" \
      > "$work/uri" 2>/dev/null &
    seeder=$!
    for _ in $(seq 300); do [ -s "$work/uri" ] && break; sleep 0.1; done
    uri=$(head -1 "$work/uri")
    start=$(date +%s.%N)
    /usr/bin/time -v -o "$work/fetch.time" "$bin" fetch "$uri" -o "$work/dst.bin" 2>/dev/null
    end=$(date +%s.%N)
    # /usr/bin/time ignores SIGINT while its child runs: signal the seeder itself.
    pkill -INT -P "$seeder" || true; wait "$seeder" || true
    cmp -s "$work/src.bin" "$work/dst.bin" || { echo "bench-udp: copy differs" >&2; exit 1; }
    secs=$(echo "$end - $start" | bc -l)
    cpu() { echo "$(field 'User time' "$1") + $(field 'System time' "$1")" | bc -l; }
    printf '%s,%s,%.1f,%.2f,%s,%.2f,%s\n' "$cs" "$run" "$(echo "$mb / $secs" | bc -l)" \
      "$(cpu "$work/fetch.time")" "$(field 'Maximum resident' "$work/fetch.time")" \
      "$(cpu "$work/seed.time")" "$(field 'Maximum resident' "$work/seed.time")"
  done
done
