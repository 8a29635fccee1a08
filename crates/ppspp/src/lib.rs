//! Sans-IO core of ppspp-web: the Peer-to-Peer Streaming Peer Protocol (RFC 7574).
//!
//! Nothing in this crate opens a socket, reads a clock or spawns a thread: time and bytes
//! come in as parameters and results come out as values, so the same code runs natively,
//! in WebAssembly and inside a deterministic simulator.
//!
//! - [`bin`]: bin numbers, the addressing shared by chunk ranges and Merkle tree nodes.
//! - [`binmap`]: compressed chunk-availability maps.
//! - [`avail`]: per-rarity availability across peers, for rarest-first picking.
//! - [`merkle`]: Merkle hash trees (SHA-1, SHA-256): building, proving and verifying chunks.
//! - [`codec`]: the datagram and message wire format.
//! - [`congestion`]: per-channel congestion control: LEDBAT with the DTL fixes, MulTCP.
//! - [`engine`]: the PPSPP peer as a sans-IO state machine (`handle_*` / `poll_*`).
//! - [`parts`]: content made of several files or byte ranges (HLS and DASH renditions).
//! - [`picker`]: piece pickers (sequential, rarest-first, VoD, live).
//! - [`rate_limit`]: token buckets for upload and download limits.
//! - [`rng`]: the seeded generator the engine (and the simulator) draw randomness from.
//! - [`store`]: the chunk-store trait and an in-memory store.
//! - [`time`]: the time type every call takes instead of reading a clock.
//! - [`uri`]: swarm URIs (`ppspp://<root>?len=…`), shared by the CLI and the browser.
#![forbid(unsafe_code)]
#![warn(missing_debug_implementations)]
#![warn(missing_docs)]

pub mod avail;
pub mod bin;
pub mod binmap;
pub mod codec;
pub mod congestion;
pub mod content;
pub mod engine;
pub mod hex;
pub mod live;
pub mod merkle;
pub mod parts;
pub mod picker;
pub mod rate_limit;
pub mod rng;
pub mod store;
pub mod time;
pub mod uri;

pub use bin::Bin;
