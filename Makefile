# ppspp-web: every entry point a person or CI uses. `make help` lists them.
SHELL := /bin/bash
.DEFAULT_GOAL := help
CARGO ?= cargo
FUZZ_SECONDS ?= 60
export CARGO_TERM_COLOR ?= never

.PHONY: help setup test lint test-rust test-wasm test-fuzz-build fuzz bench experiments demo clean

help:
	@echo "make test    install what is missing, then run every test (what CI runs)"
	@echo "make bench   run the benchmarks (criterion); figures go to BENCHMARKS.md by hand"
	@echo "make experiments  run every simulator experiment (docs/EXPERIMENTS.md) into target/sim/"
	@echo "make fuzz    fuzz the datagram decoder for FUZZ_SECONDS (default $(FUZZ_SECONDS)) seconds"
	@echo "make demo    the browser demo (not available yet: see README)"

setup:
	@scripts/setup.sh core

test: setup lint test-rust test-wasm test-fuzz-build
	@echo "make test: all checks passed"

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings

test-rust:
	$(CARGO) test --workspace --locked

# The core must build for the browser.
test-wasm:
	$(CARGO) build -p ppspp --target wasm32-unknown-unknown --locked

# The fuzz target must compile on stable even where cargo-fuzz/nightly are absent.
test-fuzz-build:
	$(CARGO) build --manifest-path crates/ppspp/fuzz/Cargo.toml --locked

fuzz:
	@scripts/setup.sh fuzz
	cd crates/ppspp && $(CARGO) +nightly fuzz run decode_datagram -- -max_total_time=$(FUZZ_SECONDS)

bench: setup
	$(CARGO) bench -p ppspp --locked --benches

SIM_EXPERIMENTS := link capacity delay loss latecomer priority swarm

# Every simulator experiment (docs/EXPERIMENTS.md); results in target/sim/<experiment>.
experiments: setup
	$(CARGO) build --release -p ppspp-sim --locked
	@for e in $(SIM_EXPERIMENTS); do \
		echo "== ppspp-sim $$e"; \
		target/release/ppspp-sim $$e | tail -n 1 || exit 1; \
	done

demo:
	@echo "make demo: the browser demo is not built yet; it arrives with the browser peer (see README, Status)." >&2
	@exit 2

clean:
	$(CARGO) clean
