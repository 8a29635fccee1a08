//! The core's integration tests, one binary: each file is a module (named as before), and
//! the engine's generic code is compiled once for all of them rather than once per file.
//! `cargo test -p ppspp --test integration <module>::` runs one file's tests.

mod common;

mod binmap_props;
mod bins;
mod bounded_swarm;
mod codec;
mod data_batching;
mod discovery;
mod engine_pair;
mod hostile_peers;
mod http_origin;
mod libswift_interop;
mod live_engine;
mod live_part;
mod memory_bound;
mod merkle_proptest;
mod merkle_vectors;
mod merkle_verify;
mod module_cycles;
mod read_ahead;
mod saved_copies;
mod uploading;
mod wrong_length;
