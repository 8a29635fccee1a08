# ppspp-web: every entry point a person or CI uses. `make help` lists them.
SHELL := /bin/bash
.DEFAULT_GOAL := help
CARGO ?= cargo
FUZZ_SECONDS ?= 60
# decode_datagram (crates/ppspp/fuzz) or signal_message (signaling/fuzz).
FUZZ_TARGET ?= decode_datagram
export CARGO_TERM_COLOR ?= never
# CI builds once from a fresh clone: incremental compilation's caches would only take disk.
ifeq ($(CI),true)
export CARGO_INCREMENTAL := 0
endif

.PHONY: help setup setup-pack test lint test-rust test-fuzz-build web web-poison web-bench native test-web test-e2e e2e-media fuzz bench bench-smoke bench-criterion experiments demo clean

help:
	@echo "make test    install what is missing, then run every test (what CI runs)"
	@echo "make bench   the benchmark suite: browser goodput (page and native seeder to page), verification,"
	@echo "             native UDP, swarm of pages, binmap, simulated LEDBAT, signaling and seeder scale, swarm across"
	@echo "             the emulated internet and native WebRTC stacks compared (both root)"
	@echo "             -> target/bench/summary.json, BENCHMARKS.md"
	@echo "make bench-smoke  the same once with tiny sizes, in minutes (part of make test)"
	@echo "make experiments  run every simulator experiment (docs/EXPERIMENTS.md) into target/sim/"
	@echo "make fuzz    fuzz FUZZ_TARGET (default $(FUZZ_TARGET), the datagram decoder; signal_message:"
	@echo "             the signaling server's JSON messages) for FUZZ_SECONDS (default $(FUZZ_SECONDS)) seconds"
	@echo "make demo    build everything, start signaling + seeder + web server, print the page URL"
	@echo "             (HEADLESS=1: 1 seeder + 4 headless pages play it; prints a summary)"
	@echo "             (LIVE=1: ffmpeg's test source streamed live through ppspp live instead)"
	@echo "make web     build the npm package (web/: Wasm + TypeScript); make setup-pack installs what it needs"
	@echo "make lint    cargo fmt --check, clippy -D warnings (every crate and feature), ESLint on web/ and e2e/"
	@echo "make native  the release ppspp, ppspp-signal and link emulator (what the e2e tests and demo run)"
	@echo "make e2e-media  the videos and ladders the e2e suite plays (target/e2e/)"

setup:
	@scripts/setup.sh web

# Only what building and packing the npm package needs (no browsers, servers or ffmpeg).
setup-pack:
	@scripts/setup.sh pack

# lint, test-rust, test-fuzz-build and test-web, then test-e2e and bench-smoke; `make native`
# and then the e2e suite's media (`make e2e-media`) are made alongside from the start at the
# lowest CPU priority (scripts/test-all.sh).
test: setup
	@CARGO=$(CARGO) MAKE=$(MAKE) scripts/test-all.sh

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets --locked --features ppspp-cli/webrtc-rs,ppspp-wasm/bench -- -D warnings
	$(CARGO) clippy -p ppspp-cli --all-targets --locked -- -D warnings
	npx --no-install eslint --max-warnings 0 web e2e

# The workspace's tests. The same flags in scripts/bench-native.mjs (TEST_BUILD) and
# crates/ppspp-cli/tests/wan.rs (signal_bin), so that their builds find this one fresh;
# `ppspp-wasm/bench` builds the verification benchmark's example, which the bench smoke runs.
# Four tests at a time on any machine: many wait on emulated links, timers and child
# processes (the emulated-internet tests wait on little else), not on the CPU.
test-rust:
	$(CARGO) test --workspace --locked --features ppspp-cli/webrtc-rs,ppspp-wasm/bench -- --test-threads 4

# The fuzz targets must compile on stable even where cargo-fuzz/nightly are absent. A check
# (no code generated): `make fuzz` builds them with cargo-fuzz's own flags anyway. A check
# links nothing, so libfuzzer-sys is given a library to link (CUSTOM_LIBFUZZER_PATH, its
# own override; the file need not exist) instead of compiling libFuzzer's C++ twice.
NO_LIBFUZZER := CUSTOM_LIBFUZZER_PATH=$(CURDIR)/target/fuzz-check/libfuzzer.a
test-fuzz-build:
	$(NO_LIBFUZZER) $(CARGO) check --manifest-path crates/ppspp/fuzz/Cargo.toml --locked
	$(NO_LIBFUZZER) $(CARGO) check --manifest-path signaling/fuzz/Cargo.toml --locked

# The npm package: the engine in Wasm (wasm-pack), the TypeScript (tsc) in web/dist, the
# engine's Worker bundled into one script (rolldown). It is also `make test`'s check that
# the core builds for wasm32.
web:
	cd web && node scripts/build-wasm.mjs && npx tsc -p tsconfig.json && node scripts/bundle-worker.mjs

# The test-only poisoning build of the engine (web/wasm-poison/), for the e2e suite.
web-poison:
	cd web && node scripts/build-wasm.mjs --poison

# The engine with the benchmark's verification workload (web/wasm-bench/), for make bench.
web-bench:
	cd web && node scripts/build-wasm.mjs --bench

# The native seeder, the signaling server and the link emulator, optimised (demo, e2e).
native:
	$(CARGO) build --release --locked -p ppspp-cli -p ppspp-signal -p ppspp-linkem --features ppspp-cli/webrtc-rs

# Type checks (package, its tests, the e2e suite) and the package's unit tests.
test-web: web
	cd web && npx tsc -p tsconfig.json --noEmit && npx tsc -p test/tsconfig.json --noEmit
	npx tsc -p e2e/tsconfig.json
	cd web && npx vitest run

# Playwright swarm tests with Debian's Chromium, in a network namespace of loopback only, in
# two groups: those that mostly wait three files at a time, then the rest (scripts/test-e2e.sh).
test-e2e: web web-poison native
	scripts/test-e2e.sh

# The videos and ladders the e2e suite plays, made with ffmpeg under target/e2e/ (the suite's
# global setup makes what is missing); `make test` makes them beside the Rust tests.
e2e-media: native
	cd e2e && E2E_GROUP=media PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npx playwright test

fuzz:
	@scripts/setup.sh fuzz
	cd $(if $(filter signal_message,$(FUZZ_TARGET)),signaling,crates/ppspp) && \
	  $(CARGO) +nightly fuzz run $(FUZZ_TARGET) -- -max_total_time=$(FUZZ_SECONDS)

# The benchmark suite (BENCHMARKS.md says what each figure means). Browser parts run in a
# network namespace of loopback only.
bench: setup web web-bench native
	$(CARGO) build --release --locked -p ppspp-sim
	node scripts/bench-native.mjs
	scripts/netns.sh node scripts/bench-browser.mjs
	cd e2e && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 ../scripts/netns.sh npx playwright test --config playwright.bench.config.ts
	node scripts/bench-report.mjs

# Every benchmark once with tiny sizes: checks that each runs and yields numbers, not speed.
bench-smoke: web web-bench native
	node scripts/bench-native.mjs --smoke
	scripts/netns.sh node scripts/bench-browser.mjs --smoke
	cd e2e && BENCH_SMOKE=1 PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 ../scripts/netns.sh npx playwright test --config playwright.bench.config.ts
	node scripts/bench-report.mjs --smoke

# The criterion micro-benchmarks alone (binmap, Merkle, codec, engine).
bench-criterion: setup
	$(CARGO) bench -p ppspp --locked --benches

SIM_EXPERIMENTS := link capacity delay loss latecomer priority coexist swarm latency multipath locality

# Every simulator experiment (docs/EXPERIMENTS.md); results in target/sim/<experiment>.
experiments: setup
	$(CARGO) build --release -p ppspp-sim --locked
	@for e in $(SIM_EXPERIMENTS); do \
		echo "== ppspp-sim $$e"; \
		target/release/ppspp-sim $$e | tail -n 1 || exit 1; \
	done

demo: setup web native
	@scripts/demo.sh

clean:
	$(CARGO) clean
