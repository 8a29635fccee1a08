//! How the engine uses an HTTP origin: limits, deadlines and retries.

use core::time::Duration;

/// How the engine uses an HTTP origin. [`HttpOriginConfig::default`] suits a browser.
#[derive(Clone, Debug, PartialEq)]
pub struct HttpOriginConfig {
    /// Requests in flight at most (tree and content together).
    pub max_requests: usize,
    /// Content bytes per request at most (whole chunks; at least one chunk).
    pub max_request_bytes: u64,
    /// The first bytes of the content fetched from the origin at once.
    pub head_bytes: u64,
    /// A due chunk asked of a peer and not delivered for this long is asked of the origin.
    pub peer_deadline: Duration,
    /// The same for a chunk playback waits for
    /// ([`Engine::set_waiting_for`](super::super::Engine::set_waiting_for): no first frame
    /// yet, or a stall coming): shorter, as the viewer is already waiting.
    pub waiting_deadline: Duration,
    /// Chunks asked of the origin and not delivered for this long may be asked of peers
    /// too (whichever copy comes first is kept): a slow or silent origin holds nothing up
    /// that a peer can deliver.
    pub origin_deadline: Duration,
    /// With no peer connected (or coming) for this long, the origin serves the whole urgent
    /// span (zero: from the start, as an HTTP-only page wants).
    pub alone_after: Duration,
    /// The first retry's delay after a failed request; it doubles per failure in a row.
    pub retry_base: Duration,
    /// The longest delay between retries.
    pub retry_max: Duration,
    /// Failures in a row after which the origin is no longer used.
    pub max_failures: u32,
}

impl Default for HttpOriginConfig {
    fn default() -> Self {
        HttpOriginConfig {
            max_requests: 4,
            max_request_bytes: 256 << 10,
            head_bytes: 64 << 10,
            peer_deadline: Duration::from_millis(1000),
            waiting_deadline: Duration::from_millis(400),
            origin_deadline: Duration::from_millis(1000),
            alone_after: Duration::from_secs(3),
            retry_base: Duration::from_millis(500),
            retry_max: Duration::from_secs(30),
            max_failures: 8,
        }
    }
}
