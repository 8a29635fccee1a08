#!/usr/bin/env bash
# Installs what `make test` / `make bench` / `make fuzz` need and is missing. Idempotent:
# every step checks first, so a second run does nothing. Usage: scripts/setup.sh [core|fuzz]
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

need_font() {
    # The simulator's plots draw text with DejaVu Sans (plotters + ab_glyph, no download).
    if ! dpkg -s fonts-dejavu-core >/dev/null 2>&1; then
        log "installing fonts-dejavu-core (font for the simulator's plots)"
        if [ "$(id -u)" -eq 0 ]; then
            apt-get install -y fonts-dejavu-core || { apt-get update && apt-get install -y fonts-dejavu-core; }
        else
            sudo apt-get install -y fonts-dejavu-core || { sudo apt-get update && sudo apt-get install -y fonts-dejavu-core; }
        fi
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
    fuzz) need_rust; need_fuzz ;;
    *) echo "setup: unknown part '$what' (core|fuzz)" >&2; exit 2 ;;
esac
