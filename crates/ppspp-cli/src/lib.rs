//! The `ppspp` command's adapter code (transports, the driver loop, the subcommands), as a
//! library so that its load generators (`examples/`) drive peers the way the command does.
//! Not a stable API: the command line is the interface; all protocol logic lives in the
//! `ppspp` crate.

pub mod check;
pub mod fetch;
pub mod file_blocks;
pub mod file_store;
pub mod gather;
pub mod http_origin;
pub mod ice_args;
pub mod live;
pub mod metrics;
pub mod net;
pub mod presentation;
pub mod progress;
pub mod root;
pub mod rtc;
pub mod seed;
pub mod send_batch;
pub mod serve;
pub mod signal;
pub mod stats;
pub mod udp;

/// Seed for the engine's channel IDs and picker randomness: not cryptographic, only
/// different per process (std's hasher keys come from the OS).
pub fn random_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    if let Ok(t) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        h.write_u128(t.as_nanos());
    }
    h.finish()
}

/// Writes `line` and a newline to standard output. A reader that went away before it
/// (`ppspp root FILE | head -1`) is not an error: it read what it wanted.
pub fn print_line(line: impl std::fmt::Display) -> Result<(), StdoutError> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{line}").and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(StdoutError(e)),
        _ => Ok(()),
    }
}

/// Standard output would not take a line (other than its reader going away).
#[derive(Debug, thiserror::Error)]
#[error("cannot write to standard output: {0}")]
pub struct StdoutError(#[source] pub std::io::Error);

/// Resolves on Ctrl-C or SIGTERM (the trigger shared with the signaling server).
pub async fn shutdown_signal() {
    ppspp_shutdown::shutdown_signal().await;
}
