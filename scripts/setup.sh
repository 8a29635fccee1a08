#!/usr/bin/env bash
# Installs what `make test` / `make bench` / `make demo` / `make fuzz` need and is missing.
# Idempotent: every step checks first, so a second run does nothing.
# Usage: scripts/setup.sh [core|pack|web|fuzz]   (pack = core + what building the npm
# package needs; web = pack + what the browser tests, demo and benchmarks need)
set -euo pipefail

what=${1:-core}
log() { printf 'setup: %s\n' "$*"; }

need_rust() {
    if ! command -v cargo >/dev/null 2>&1; then
        echo "setup: cargo not found; install Rust with rustup (https://rustup.rs) first" >&2
        exit 1
    fi
    if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
        log "adding Rust target wasm32-unknown-unknown"
        rustup target add wasm32-unknown-unknown
    fi
    for comp in rustfmt clippy; do
        if ! rustup component list --installed 2>/dev/null | grep -q "^$comp"; then
            log "adding Rust component $comp"
            rustup component add "$comp"
        fi
    done
}

apt_install() {
    if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
    $sudo apt-get install -y "$@" || { $sudo apt-get update && $sudo apt-get install -y "$@"; }
}

# The exact wasm-bindgen CLI the crate pins (crates/ppspp-wasm/Cargo.toml): the glue it
# generates must match the crate, and wasm-pack would otherwise try to download one.
WASM_BINDGEN_VERSION=0.2.130

cargo_install() { # name version-args...: --locked first; if the lock file names a crate
    # version the registry no longer has, let cargo resolve afresh.
    cargo install --locked "$@" || cargo install "$@"
}

# What building and packing the npm package needs (wasm-bindgen CLI, wasm-pack, the npm
# packages), and nothing for testing it.
need_pack() {
    if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
        echo "setup: node and npm (Node.js >= 20) are needed; install them first" >&2
        exit 1
    fi
    if [ "$(wasm-bindgen --version 2>/dev/null)" != "wasm-bindgen $WASM_BINDGEN_VERSION" ]; then
        log "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION (a few minutes)"
        cargo_install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION"
    fi
    if ! command -v wasm-pack >/dev/null 2>&1; then
        log "installing wasm-pack (a few minutes)"
        cargo_install wasm-pack
    fi
    need_npm
}

# npm packages of web/ and e2e/ (one workspace lock at the root); never a browser
# download: the tests use Debian's Chromium.
need_npm() {
    local root
    root="$(cd "$(dirname "$0")/.." && pwd)"
    if [ ! -f "$root/node_modules/.package-lock.json" ] \
        || [ "$root/package-lock.json" -nt "$root/node_modules/.package-lock.json" ]; then
        log "installing npm packages (npm ci)"
        (cd "$root" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 PUPPETEER_SKIP_DOWNLOAD=1 npm ci --no-audit --no-fund)
    fi
}

need_web() {
    need_pack
    local missing=()
    [ -x /usr/bin/chromium ] || missing+=(chromium)
    # Firefox ESR for the cross-browser e2e tests (driven by puppeteer-core, never a
    # downloaded browser).
    [ -x /usr/bin/firefox-esr ] || missing+=(firefox-esr)
    command -v ffmpeg >/dev/null 2>&1 || missing+=(ffmpeg)
    command -v unshare >/dev/null 2>&1 || missing+=(util-linux)
    command -v ip >/dev/null 2>&1 || missing+=(iproute2)
    # NAT routers of the emulated internet (scripts/wan.sh).
    command -v nft >/dev/null 2>&1 || [ -x /usr/sbin/nft ] || missing+=(nftables)
    # Its routers hand packets to the link emulator with iptables' NFQUEUE target (this
    # kernel's nftables has no queue expression).
    command -v iptables >/dev/null 2>&1 || [ -x /usr/sbin/iptables ] || missing+=(iptables)
    # STUN and TURN of the emulated internet's public segment.
    command -v turnserver >/dev/null 2>&1 || missing+=(coturn)
    # The TLS front of docs/DEPLOY.md, which e2e/tests/deploy.spec.ts follows.
    command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing+=(nginx-light)
    [ -x /usr/bin/time ] || missing+=(time) # CPU and peak RSS in scripts/bench-udp.sh
    # Rooms shared by several signaling instances (ppspp-signal --redis); the tests start
    # their own on a loopback port.
    command -v redis-server >/dev/null 2>&1 || [ -x /usr/bin/redis-server ] || missing+=(redis-server)
    # WebKitGTK (MediaSource, no WebRTC) through its WebDriver under a virtual display:
    # what a browser without P2P gets (e2e/tests/webkit.spec.ts).
    [ -x /usr/bin/WebKitWebDriver ] || missing+=(webkit2gtk-driver)
    command -v Xvfb >/dev/null 2>&1 || missing+=(xvfb)
    if [ ${#missing[@]} -gt 0 ]; then
        log "installing ${missing[*]} (browser tests, demo video, benchmarks)"
        apt_install "${missing[@]}"
    fi
    # The scraper of DEPLOY.md's monitoring section, which deploy.spec.ts runs (Debian's,
    # as an operator installs it; not the node exporter it recommends).
    if ! command -v prometheus >/dev/null 2>&1; then
        log "installing prometheus (the deployment test scrapes with it)"
        apt_install --no-install-recommends prometheus
    fi
}

need_font() {
    # The simulator's plots draw text with DejaVu Sans (plotters + ab_glyph, no download).
    if ! dpkg -s fonts-dejavu-core >/dev/null 2>&1; then
        log "installing fonts-dejavu-core (font for the simulator's plots)"
        apt_install fonts-dejavu-core
    fi
}

need_fuzz() {
    # cargo-fuzz instruments with sanitizers, which need a nightly compiler.
    if ! rustup toolchain list | grep -q '^nightly'; then
        log "installing the nightly toolchain (for cargo fuzz)"
        rustup toolchain install nightly --profile minimal
    fi
    if ! cargo fuzz --help >/dev/null 2>&1; then
        log "installing cargo-fuzz"
        cargo install --locked cargo-fuzz
    fi
}

case "$what" in
    core) need_rust; need_font ;;
    pack) need_rust; need_pack ;;
    web) need_rust; need_font; need_web ;;
    fuzz) need_rust; need_fuzz ;;
    *) echo "setup: unknown part '$what' (core|pack|web|fuzz)" >&2; exit 2 ;;
esac
