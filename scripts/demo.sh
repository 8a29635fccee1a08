#!/usr/bin/env bash
# `make demo`: the signaling server, a native seeder of a video and the web server; prints
# the demo page's URL. VIDEO=file.webm plays your own (WebM or fragmented MP4); without it
# a 60 s sample is made with ffmpeg. PORT (default 8080) and SIGNAL_PORT (default 8787)
# choose the ports; SEEDER_ARGS (default `--upload-limit 1000000`, an origin with little
# upload, so that the pages' exchange shows) go to `ppspp seed`. ORIGIN=1 runs no seeder:
# the web server serves the video and its hash tree (`ppspp root --tree`) as the swarm's
# HTTP origin. LIVE=1 streams ffmpeg's test source live instead, through `ppspp live`
# (LIVE_SECONDS=n ends it after n seconds; default: until Ctrl-C, or 40 s with HEADLESS=1).
# HEADLESS=1 instead opens 4 headless Chromium pages (PAGES=n), waits until all play,
# prints a summary and exits 0 only if every page played.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/target/demo"
mkdir -p "$out"

if [ "${HEADLESS:-0}" = 1 ] && [ -z "${PPSPP_IN_NETNS:-}" ]; then
    # Headless pages and every process in a network namespace of loopback only.
    PPSPP_IN_NETNS=1 exec "$root/scripts/netns.sh" "$0" "$@"
fi

live="${LIVE:-0}"
video="${VIDEO:-$out/sample.webm}"
if [ "$live" = 1 ]; then
    video=-
elif [ -z "${VIDEO:-}" ] && [ ! -s "$video" ]; then
    echo "demo: making a 60 s sample video (VP9 + Opus WebM, a keyframe every second) with ffmpeg"
    ffmpeg -y -loglevel error -f lavfi -i testsrc2=size=640x360:rate=30 \
        -f lavfi -i sine=frequency=440:sample_rate=48000 -t 60 \
        -c:v libvpx-vp9 -deadline realtime -cpu-used 8 -row-mt 1 -b:v 600k -g 30 -keyint_min 30 \
        -c:a libopus -b:a 64k -f webm "$video.tmp"
    mv "$video.tmp" "$video"
fi
[ "$live" = 1 ] || [ -s "$video" ] || { echo "demo: no video at $video" >&2; exit 1; }

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# Starts a process with stdout to a file and waits for a line matching $2, which it leaves in
# $line. Not called through $(…): the pid must reach `pids` in this shell for the cleanup.
start() { # name pattern command...
    local name=$1 pattern=$2; shift 2
    rm -f "$out/$name.out" "$out/$name.err"
    "$@" >"$out/$name.out" 2>"$out/$name.err" &
    pids+=($!)
    for _ in $(seq 1 300); do
        if line=$(grep -m1 -E "$pattern" "$out/$name.out" 2>/dev/null); then return 0; fi
        kill -0 "${pids[-1]}" 2>/dev/null || break
        sleep 0.1
    done
    echo "demo: $name did not start; its output:" >&2
    cat "$out/$name.err" >&2
    exit 1
}

start signal 'listening on ws://' "$root/target/release/ppspp-signal" --bind "127.0.0.1:${SIGNAL_PORT:-8787}"
signal_url=${line##* }
name=$(basename "$video")
mounts=(--mount "/demo-files/=$out")
[ "$live" = 1 ] || mounts+=(--mount "/media/=$(dirname "$video")")
start web '^serving ' node "$root/web/scripts/serve.mjs" --port "${PORT:-8080}" "${mounts[@]}"
web_url=${line#serving }
if [ "$live" = 1 ]; then
    # ffmpeg's test pattern and a tone at real time, a keyframe (a Cluster) every second,
    # into `ppspp live` through a FIFO (so that both are this shell's children).
    seconds=${LIVE_SECONDS:-}
    [ -n "$seconds" ] || [ "${HEADLESS:-0}" != 1 ] || seconds=40
    fifo="$out/live.fifo"
    rm -f "$fifo"
    mkfifo "$fifo"
    ffmpeg -loglevel error -re -f lavfi -i testsrc2=size=640x360:rate=30 \
        -f lavfi -i sine=frequency=440:sample_rate=48000 ${seconds:+-t "$seconds"} \
        -c:v libvpx -deadline realtime -cpu-used 8 -b:v 800k -g 30 -keyint_min 30 \
        -c:a libopus -b:a 64k -f webm -y "$fifo" 2>"$out/ffmpeg.err" &
    pids+=($!)
    # It serves two pages at once: the others take the stream from pages (the offload).
    start seeder '^ppspp://live/' sh -c 'exec "$0" live --signal "$1" --bind 127.0.0.1:0 --key "$2" --max-unchoked 2 --stats-json ${3:+--upload-limit "$3"} < "$4"' \
        "$root/target/release/ppspp" "$signal_url" "$out/live.key" "${LIVE_UPLOAD_LIMIT-1000000}" "$fifo"
    uri=$line
    source="ffmpeg's test source, live through ppspp live"
    stats="$out/seeder.out"
    video="live"
elif [ "${ORIGIN:-0}" = 1 ]; then
    # The web server is the origin: the video beside its hash tree, every byte verified.
    tree="$out/${name%.*}.tree"
    uri=$("$root/target/release/ppspp" root "$video" --hash sha256 --chunk-size 8192 --tree "$tree" \
        --http "${web_url}media/$name" --tree-url "${web_url}demo-files/$(basename "$tree")" \
        --signal "$signal_url" | grep -m1 '^ppspp://')
    source="the web server (HTTP origin, no seeder): ${web_url}media/$name"
    stats=-
else
    start seeder '^ppspp://' "$root/target/release/ppspp" seed "$video" --signal "$signal_url" \
        --bind 127.0.0.1:0 --chunk-size 8192 --hash sha256 --stats-json ${SEEDER_ARGS---upload-limit 1000000}
    uri=$line
    source="a native seeder"
    stats="$out/seeder.out"
fi
page="${web_url}demo/?uri=$(node -e 'process.stdout.write(encodeURIComponent(process.argv[1]))' "$uri")"

echo "demo: signaling $signal_url"
if [ "$live" = 1 ]; then echo "demo: $source, as"; else echo "demo: $video from $source, as"; fi
echo "  $uri"
if [ "${HEADLESS:-0}" = 1 ]; then
    node "$root/scripts/demo-headless.mjs" "$page" "$stats" "$video"
    exit $?
fi
echo
echo "Open this page (more tabs or browsers join the swarm and feed each other):"
echo
echo "  $page"
echo
echo "Ctrl-C stops the signaling server, the web server and the seeder, if any."
wait
