//! The figures an operator scrapes from `/metrics` (Prometheus' text format, OpenMetrics
//! flavour): what the server did since it started (counters, kept as it goes) and what it
//! holds now (gauges, read at each scrape). docs/DEPLOY.md lists them with what to watch.

use std::future::Future;
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
}

fn redis_histogram() -> Histogram {
    // 0.25 ms to about half a second: a Redis beside the server answers in well under a
    // millisecond, one across a region in tens.
    Histogram::new(exponential_buckets(0.000_25, 2.0, 12))
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
        m
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
