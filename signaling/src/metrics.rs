//! The figures an operator scrapes from `/metrics` (Prometheus' text format, OpenMetrics
//! flavour): what the server did since it started (counters, kept as it goes) and what it
//! holds now (gauges, read at each scrape). docs/DEPLOY.md lists them with what to watch.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::mailbox::Refused;
use crate::registry::Relayed;
use crate::report::Growth;

/// The content type of what [`Metrics::render`] returns.
pub(crate) const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Upper bounds of the room-size ranges `rooms_by_size` counts rooms in; the last range is
/// open.
const ROOM_SIZES: [usize; 5] = [1, 4, 16, 64, 256];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Outcome {
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Code {
    code: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Limit {
    limit: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Operation {
    operation: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Peers {
    peers: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Swarm {
    swarm: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SwarmSource {
    swarm: String,
    source: &'static str,
}

/// Where reported bytes came from, as labelled.
const SOURCES: [&str; 3] = ["peers", "http", "seeders"];

type Histograms = Family<Operation, Histogram, fn() -> Histogram>;

/// A limit that refused a connection (named as its flag is, without `--max-`).
#[derive(Clone, Copy, Debug)]
pub(crate) enum RefusedBy {
    Connections,
    ConnectionsPerIp,
    HttpConnections,
    HttpConnectionsPerIp,
}

impl RefusedBy {
    fn label(self) -> &'static str {
        match self {
            RefusedBy::Connections => "connections",
            RefusedBy::ConnectionsPerIp => "connections-per-ip",
            RefusedBy::HttpConnections => "http-connections",
            RefusedBy::HttpConnectionsPerIp => "http-connections-per-ip",
        }
    }
}

/// What the server holds at a scrape.
pub(crate) struct Now {
    pub rooms: usize,
    pub peers: usize,
    pub room_sizes: Vec<usize>,
    pub connections: usize,
    pub queued_bytes: usize,
    pub backend_up: bool,
}

/// Every figure of one server.
pub(crate) struct Metrics {
    registry: Registry,
    joins: Family<Outcome, Counter>,
    signals: Family<Outcome, Counter>,
    errors: Family<Code, Counter>,
    refused: Family<Limit, Counter>,
    slow_readers: Counter,
    turn_credentials: Counter,
    redis_requests: Histograms,
    redis_errors: Family<Operation, Counter>,
    rooms: Gauge,
    peers: Gauge,
    rooms_by_size: Family<Peers, Gauge>,
    connections: Gauge,
    queued_bytes: Gauge,
    backend_up: Gauge,
    reported_bytes: Family<SwarmSource, Counter>,
    reported_stalls: Family<Swarm, Counter>,
    reported_stall_seconds: Family<Swarm, Counter<f64, AtomicU64>>,
    reporters: Family<Swarm, Gauge>,
    reports_refused: Counter,
    /// Clients here that reported, per swarm: a swarm's series go when its last one leaves,
    /// so they are bounded by the rooms here.
    reporting: Mutex<HashMap<Arc<str>, usize>>,
}

fn redis_histogram() -> Histogram {
    // 0.25 ms to about half a second: a Redis beside the server answers in well under a
    // millisecond, one across a region in tens.
    Histogram::new(exponential_buckets(0.000_25, 2.0, 12))
}

fn swarm_label(swarm: &str) -> Swarm {
    Swarm {
        swarm: swarm.to_owned(),
    }
}

fn to_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl Metrics {
    pub(crate) fn new() -> Metrics {
        let mut m = Metrics {
            registry: Registry::with_prefix("ppspp_signal"),
            joins: Family::default(),
            signals: Family::default(),
            errors: Family::default(),
            refused: Family::default(),
            slow_readers: Counter::default(),
            turn_credentials: Counter::default(),
            redis_requests: Family::new_with_constructor(redis_histogram),
            redis_errors: Family::default(),
            rooms: Gauge::default(),
            peers: Gauge::default(),
            rooms_by_size: Family::default(),
            connections: Gauge::default(),
            queued_bytes: Gauge::default(),
            backend_up: Gauge::default(),
            reported_bytes: Family::default(),
            reported_stalls: Family::default(),
            reported_stall_seconds: Family::default(),
            reporters: Family::default(),
            reports_refused: Counter::default(),
            reporting: Mutex::default(),
        };
        let r = &mut m.registry;
        r.register(
            "joins",
            "Joins answered, by outcome: welcome, or the error code that refused it",
            m.joins.clone(),
        );
        r.register(
            "signals",
            "Signals a client of this instance sent, by outcome: delivered (or handed to the addressee's instance), unknown-peer, sender-share and queue-full (the addressee's queue), unavailable (Redis did not answer)",
            m.signals.clone(),
        );
        r.register(
            "errors",
            "Error messages sent to clients, by code",
            m.errors.clone(),
        );
        r.register(
            "connections_refused",
            "TCP or WebSocket connections refused, by the limit that refused them",
            m.refused.clone(),
        );
        r.register(
            "slow_readers_dropped",
            "Clients dropped because their queue or a write to them overflowed",
            m.slow_readers.clone(),
        );
        r.register(
            "turn_credentials",
            "TURN credentials issued (in welcomes and ice-servers replies)",
            m.turn_credentials.clone(),
        );
        r.register(
            "redis_request_duration_seconds",
            "Round trips to Redis, by operation",
            m.redis_requests.clone(),
        );
        r.register(
            "redis_errors",
            "Redis requests that failed or timed out, by operation",
            m.redis_errors.clone(),
        );
        r.register(
            "rooms",
            "Rooms with a peer on this instance",
            m.rooms.clone(),
        );
        r.register("peers", "Peers joined on this instance", m.peers.clone());
        r.register(
            "rooms_by_size",
            "Rooms by how many of their peers are on this instance",
            m.rooms_by_size.clone(),
        );
        r.register(
            "connections",
            "Open WebSocket connections",
            m.connections.clone(),
        );
        r.register(
            "queued_bytes",
            "Bytes queued for this instance's clients",
            m.queued_bytes.clone(),
        );
        r.register(
            "backend_up",
            "1 while the room store answers (always, without Redis), else 0",
            m.backend_up.clone(),
        );
        r.register(
            "reported_bytes",
            "Bytes pages reported receiving, per swarm and source (peers, http, seeders); only pages whose site opted in report",
            m.reported_bytes.clone(),
        );
        r.register(
            "reported_stalls",
            "Stalls of playback pages reported, per swarm",
            m.reported_stalls.clone(),
        );
        r.register(
            "reported_stall_seconds",
            "Seconds of stalled playback pages reported, per swarm",
            m.reported_stall_seconds.clone(),
        );
        r.register(
            "reporting_peers",
            "Pages on this instance that reported, per swarm",
            m.reporters.clone(),
        );
        r.register(
            "reports_refused",
            "Reports not taken (too soon, totals that went down, more than a viewer can receive)",
            m.reports_refused.clone(),
        );
        m
    }

    fn lock_reporting(&self) -> std::sync::MutexGuard<'_, HashMap<Arc<str>, usize>> {
        // Each update is one statement, so a poisoned lock is still usable.
        self.reporting.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A client of `swarm` reported what `grew` since its last report (`first`: its first
    /// since it joined).
    pub(crate) fn reported(&self, swarm: &Arc<str>, first: bool, grew: Growth) {
        if first {
            *self.lock_reporting().entry(swarm.clone()).or_default() += 1;
            self.reporters.get_or_create(&swarm_label(swarm)).inc();
        }
        let bytes = [grew.bytes.peers, grew.bytes.http, grew.bytes.seeders];
        for (source, n) in SOURCES.into_iter().zip(bytes) {
            self.reported_bytes
                .get_or_create(&SwarmSource {
                    swarm: swarm.to_string(),
                    source,
                })
                .inc_by(n);
        }
        let label = swarm_label(swarm);
        self.reported_stalls
            .get_or_create(&label)
            .inc_by(grew.stalls);
        self.reported_stall_seconds
            .get_or_create(&label)
            .inc_by(grew.stall_ms as f64 / 1000.0);
    }

    /// A client of `swarm` that had reported left; with the last one, the swarm's series go.
    pub(crate) fn reporter_left(&self, swarm: &Arc<str>) {
        let mut reporting = self.lock_reporting();
        let Some(n) = reporting.get_mut(swarm) else {
            return;
        };
        *n -= 1;
        let label = swarm_label(swarm);
        if *n > 0 {
            self.reporters.get_or_create(&label).dec();
            return;
        }
        reporting.remove(swarm);
        for source in SOURCES {
            self.reported_bytes.remove(&SwarmSource {
                swarm: swarm.to_string(),
                source,
            });
        }
        self.reported_stalls.remove(&label);
        self.reported_stall_seconds.remove(&label);
        self.reporters.remove(&label);
    }

    pub(crate) fn report_refused(&self) {
        self.reports_refused.inc();
    }

    pub(crate) fn joined(&self) {
        self.joins
            .get_or_create(&Outcome { outcome: "welcome" })
            .inc();
    }

    pub(crate) fn join_refused(&self, code: &str) {
        let outcome = match code {
            "room-full" => "room-full",
            "too-many-rooms" => "too-many-rooms",
            "unavailable" => "unavailable",
            "bad-swarm" => "bad-swarm",
            "unsupported-version" => "unsupported-version",
            "already-joined" => "already-joined",
            _ => "other",
        };
        self.joins.get_or_create(&Outcome { outcome }).inc();
    }

    pub(crate) fn relayed(&self, relayed: Relayed) {
        let outcome = match relayed {
            Relayed::Delivered => "delivered",
            Relayed::UnknownPeer => "unknown-peer",
            Relayed::Busy(Refused::SenderShare) => "sender-share",
            Relayed::Busy(Refused::Full) => "queue-full",
            Relayed::Unavailable => "unavailable",
        };
        self.signals.get_or_create(&Outcome { outcome }).inc();
    }

    pub(crate) fn error_sent(&self, code: &str) {
        self.errors
            .get_or_create(&Code {
                code: code.to_owned(),
            })
            .inc();
    }

    pub(crate) fn refused(&self, by: RefusedBy) {
        self.refused
            .get_or_create(&Limit { limit: by.label() })
            .inc();
    }

    pub(crate) fn slow_reader_dropped(&self) {
        self.slow_readers.inc();
    }

    pub(crate) fn turn_credential_issued(&self) {
        self.turn_credentials.inc();
    }

    /// Runs one Redis request, timing it and counting its failure.
    pub(crate) async fn redis<T, E>(
        &self,
        operation: &'static str,
        request: impl Future<Output = Result<T, E>>,
    ) -> Result<T, E> {
        let started = Instant::now();
        let result = request.await;
        let label = Operation { operation };
        self.redis_requests
            .get_or_create(&label)
            .observe(started.elapsed().as_secs_f64());
        if result.is_err() {
            self.redis_errors.get_or_create(&label).inc();
        }
        result
    }

    /// The text a scrape gets, with the gauges set from `now`.
    pub(crate) fn render(&self, now: Now) -> String {
        self.rooms.set(to_i64(now.rooms));
        self.peers.set(to_i64(now.peers));
        self.connections.set(to_i64(now.connections));
        self.queued_bytes.set(to_i64(now.queued_bytes));
        self.backend_up.set(i64::from(now.backend_up));
        for (range, count) in size_ranges(&now.room_sizes) {
            self.rooms_by_size
                .get_or_create(&Peers { peers: range })
                .set(to_i64(count));
        }
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = encode(&mut text, &self.registry);
        text
    }
}

/// How many rooms fall in each size range, every range listed (empty ones as 0).
fn size_ranges(sizes: &[usize]) -> [(&'static str, usize); ROOM_SIZES.len() + 1] {
    const NAMES: [&str; ROOM_SIZES.len() + 1] = ["1", "2-4", "5-16", "17-64", "65-256", "257+"];
    let mut counts = [0usize; ROOM_SIZES.len() + 1];
    for &n in sizes {
        let i = ROOM_SIZES
            .iter()
            .position(|&bound| n <= bound)
            .unwrap_or(ROOM_SIZES.len());
        counts[i] += 1;
    }
    std::array::from_fn(|i| (NAMES[i], counts[i]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Now {
        Now {
            rooms: 3,
            peers: 7,
            room_sizes: vec![1, 2, 4],
            connections: 9,
            queued_bytes: 512,
            backend_up: true,
        }
    }

    /// The value of the sample `line_start` begins (name and labels), if present.
    fn sample(text: &str, line_start: &str) -> Option<f64> {
        text.lines()
            .find_map(|l| l.strip_prefix(line_start)?.strip_prefix(' '))
            .and_then(|v| v.parse().ok())
    }

    #[test]
    fn room_sizes_fall_in_their_ranges() {
        let got = size_ranges(&[1, 1, 2, 4, 5, 16, 17, 64, 65, 256, 257, 10_000]);
        assert_eq!(
            got,
            [
                ("1", 2),
                ("2-4", 2),
                ("5-16", 2),
                ("17-64", 2),
                ("65-256", 2),
                ("257+", 2)
            ]
        );
    }

    #[test]
    fn a_scrape_shows_the_counts_and_the_state_now() {
        let m = Metrics::new();
        m.joined();
        m.joined();
        m.join_refused("room-full");
        m.relayed(Relayed::Delivered);
        m.relayed(Relayed::Busy(Refused::SenderShare));
        m.error_sent("rate-limited");
        m.refused(RefusedBy::ConnectionsPerIp);
        m.turn_credential_issued();
        let text = m.render(now());
        assert_eq!(
            sample(&text, "ppspp_signal_joins_total{outcome=\"welcome\"}"),
            Some(2.0)
        );
        assert_eq!(
            sample(&text, "ppspp_signal_joins_total{outcome=\"room-full\"}"),
            Some(1.0)
        );
        assert_eq!(
            sample(&text, "ppspp_signal_signals_total{outcome=\"delivered\"}"),
            Some(1.0)
        );
        assert_eq!(
            sample(
                &text,
                "ppspp_signal_signals_total{outcome=\"sender-share\"}"
            ),
            Some(1.0)
        );
        assert_eq!(
            sample(&text, "ppspp_signal_errors_total{code=\"rate-limited\"}"),
            Some(1.0)
        );
        assert_eq!(
            sample(
                &text,
                "ppspp_signal_connections_refused_total{limit=\"connections-per-ip\"}"
            ),
            Some(1.0)
        );
        assert_eq!(
            sample(&text, "ppspp_signal_turn_credentials_total"),
            Some(1.0)
        );
        assert_eq!(sample(&text, "ppspp_signal_rooms"), Some(3.0));
        assert_eq!(sample(&text, "ppspp_signal_peers"), Some(7.0));
        assert_eq!(
            sample(&text, "ppspp_signal_rooms_by_size{peers=\"2-4\"}"),
            Some(2.0)
        );
        assert_eq!(
            sample(&text, "ppspp_signal_rooms_by_size{peers=\"257+\"}"),
            Some(0.0)
        );
        assert_eq!(sample(&text, "ppspp_signal_backend_up"), Some(1.0));
        assert!(text.ends_with("# EOF\n"), "{text}");
    }

    #[tokio::test]
    async fn redis_requests_are_timed_and_their_failures_counted() {
        let m = Metrics::new();
        let ok: Result<u8, ()> = m.redis("join", async { Ok(1) }).await;
        let failed: Result<u8, ()> = m.redis("join", async { Err(()) }).await;
        assert_eq!((ok, failed), (Ok(1), Err(())));
        let text = m.render(now());
        assert_eq!(
            sample(
                &text,
                "ppspp_signal_redis_request_duration_seconds_count{operation=\"join\"}"
            ),
            Some(2.0)
        );
        assert_eq!(
            sample(&text, "ppspp_signal_redis_errors_total{operation=\"join\"}"),
            Some(1.0)
        );
    }
}
