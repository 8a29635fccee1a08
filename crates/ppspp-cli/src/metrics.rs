//! `ppspp seed --metrics ADDR`: the seeder's figures for Prometheus on `http://ADDR/metrics`,
//! one label set per swarm it serves (a presentation serves one per rendition).
//!
//! The engine keeps its own running totals ([`Stats`]); each swarm's [`SwarmMetrics`] copies
//! them in once a second (the driver's stats tick), so a scrape reads them without touching
//! the engine.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use ppspp::engine::Stats;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// The path scraped.
pub const PATH: &str = "/metrics";

const CONTENT_TYPE_TEXT: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Scrapes served at once; more wait for a slot. A scraper or two is the use.
const MAX_CONNECTIONS: usize = 8;

/// How long a scraper may take to send its request head.
const HEADER_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Swarm {
    /// The Merkle root in hex.
    swarm: String,
    /// What is served: the file's name, or the rendition's id.
    name: String,
}

/// Every figure of one seeder process.
pub struct SeedMetrics {
    registry: Registry,
    bytes_sent: Family<Swarm, Counter>,
    chunks_resent: Family<Swarm, Counter>,
    datagrams_sent: Family<Swarm, Counter>,
    datagrams_received: Family<Swarm, Counter>,
    handshakes_refused: Family<Swarm, Counter>,
    peers: Family<Swarm, Gauge>,
    half_open: Family<Swarm, Gauge>,
}

impl Default for SeedMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl SeedMetrics {
    pub fn new() -> SeedMetrics {
        let mut m = SeedMetrics {
            registry: Registry::with_prefix("ppspp_seed"),
            bytes_sent: Family::default(),
            chunks_resent: Family::default(),
            datagrams_sent: Family::default(),
            datagrams_received: Family::default(),
            handshakes_refused: Family::default(),
            peers: Family::default(),
            half_open: Family::default(),
        };
        let r = &mut m.registry;
        r.register(
            "bytes_sent",
            "Payload bytes of chunks sent to peers, resent ones included",
            m.bytes_sent.clone(),
        );
        r.register(
            "chunks_resent",
            "Chunks sent again after they were taken for lost",
            m.chunks_resent.clone(),
        );
        r.register(
            "datagrams_sent",
            "Datagrams sent (UDP and WebRTC data channels)",
            m.datagrams_sent.clone(),
        );
        r.register(
            "datagrams_received",
            "Datagrams received, dropped ones included",
            m.datagrams_received.clone(),
        );
        r.register(
            "handshakes_refused",
            "Handshakes refused because every peer slot (--max-peers) was taken",
            m.handshakes_refused.clone(),
        );
        r.register("peers", "Peers connected now", m.peers.clone());
        r.register(
            "half_open",
            "Handshakes answered whose peer has not come back yet",
            m.half_open.clone(),
        );
        m
    }

    /// The figures of the swarm `root` (hex), called `name`.
    pub fn swarm(self: &Arc<Self>, root: &str, name: &str) -> SwarmMetrics {
        let labels = Swarm {
            swarm: root.to_owned(),
            name: name.to_owned(),
        };
        // Listed from the start, at zero, so a dashboard sees the swarm before its first peer.
        for family in [
            &self.bytes_sent,
            &self.chunks_resent,
            &self.datagrams_sent,
            &self.datagrams_received,
            &self.handshakes_refused,
        ] {
            let _ = family.get_or_create(&labels);
        }
        let _ = self.peers.get_or_create(&labels);
        let _ = self.half_open.get_or_create(&labels);
        SwarmMetrics {
            metrics: self.clone(),
            labels,
            last: Stats::default(),
        }
    }

    /// The text a scrape gets.
    pub fn render(&self) -> String {
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = encode(&mut text, &self.registry);
        text
    }

    /// Serves `GET /metrics` on `addr` in a task of the current runtime; the address it
    /// listens on (the real port when `addr`'s is 0).
    pub async fn serve(self: &Arc<Self>, addr: SocketAddr) -> Result<SocketAddr, MetricsError> {
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| MetricsError::Listen { addr, source })?;
        let local = listener
            .local_addr()
            .map_err(|source| MetricsError::LocalAddr { addr, source })?;
        tokio::spawn(accept(listener, self.clone()));
        Ok(local)
    }
}

/// Why `--metrics` cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    #[error("--metrics {addr}: cannot listen: {source}")]
    Listen {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    /// The bound listener would not say its address.
    #[error("--metrics {addr}: {source}")]
    LocalAddr {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// Accepts scrapers until the runtime ends; each connection answers requests until the
/// scraper closes it.
async fn accept(listener: TcpListener, metrics: Arc<SeedMetrics>) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return;
        };
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of file descriptors and the like: back off instead of spinning.
                eprintln!("ppspp: metrics: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let metrics = metrics.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req| {
                let metrics = metrics.clone();
                async move { Ok::<_, std::convert::Infallible>(answer(&metrics, &req)) }
            });
            let conn = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service);
            let _ = conn.await;
            drop(slot);
        });
    }
}

fn answer(metrics: &SeedMetrics, req: &Request<Incoming>) -> Response<Full<Bytes>> {
    let (status, content_type, body) = match (req.method(), req.uri().path()) {
        (&Method::GET, PATH) => (StatusCode::OK, CONTENT_TYPE_TEXT, metrics.render()),
        (_, PATH) => (
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain; charset=utf-8",
            "GET only\n".to_owned(),
        ),
        _ => (
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8",
            format!("the metrics are at {PATH}\n"),
        ),
    };
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// One swarm's figures, updated from its engine's [`Stats`].
pub struct SwarmMetrics {
    metrics: Arc<SeedMetrics>,
    labels: Swarm,
    /// The totals last copied in.
    last: Stats,
}

impl SwarmMetrics {
    /// Copies the engine's figures in: its totals' growth since the last update, its
    /// current peers.
    pub fn update(&mut self, s: &Stats) {
        let m = &self.metrics;
        let grew = |family: &Family<Swarm, Counter>, now: u64, before: u64| {
            family
                .get_or_create(&self.labels)
                .inc_by(now.saturating_sub(before));
        };
        grew(&m.bytes_sent, s.bytes_uploaded, self.last.bytes_uploaded);
        grew(
            &m.chunks_resent,
            s.retransmissions,
            self.last.retransmissions,
        );
        grew(
            &m.datagrams_sent,
            s.datagrams_sent,
            self.last.datagrams_sent,
        );
        grew(
            &m.datagrams_received,
            s.datagrams_received,
            self.last.datagrams_received,
        );
        grew(
            &m.handshakes_refused,
            s.handshakes_refused,
            self.last.handshakes_refused,
        );
        let gauge = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        m.peers.get_or_create(&self.labels).set(gauge(s.peers));
        m.half_open
            .get_or_create(&self.labels)
            .set(gauge(s.half_open));
        self.last = s.clone();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(text: &str, series: &str) -> Option<f64> {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
            .and_then(|v| v.parse().ok())
    }

    #[test]
    fn updates_add_what_the_totals_grew_by_and_set_the_peers() {
        let metrics = Arc::new(SeedMetrics::new());
        let mut swarm = metrics.swarm("ab12", "video.mp4");
        let labels = "{swarm=\"ab12\",name=\"video.mp4\"}";
        let text = metrics.render();
        assert_eq!(
            sample(&text, &format!("ppspp_seed_bytes_sent_total{labels}")),
            Some(0.0),
            "{text}"
        );
        swarm.update(&Stats {
            bytes_uploaded: 1000,
            retransmissions: 2,
            handshakes_refused: 1,
            peers: 3,
            ..Stats::default()
        });
        swarm.update(&Stats {
            bytes_uploaded: 1500,
            retransmissions: 2,
            handshakes_refused: 4,
            peers: 2,
            ..Stats::default()
        });
        let text = metrics.render();
        let at = |name: &str| sample(&text, &format!("{name}{labels}"));
        assert_eq!(at("ppspp_seed_bytes_sent_total"), Some(1500.0), "{text}");
        assert_eq!(at("ppspp_seed_chunks_resent_total"), Some(2.0));
        assert_eq!(at("ppspp_seed_handshakes_refused_total"), Some(4.0));
        assert_eq!(at("ppspp_seed_peers"), Some(2.0));
    }

    #[test]
    fn two_swarms_keep_their_own_figures() {
        let metrics = Arc::new(SeedMetrics::new());
        let mut one = metrics.swarm("01", "720p");
        let mut two = metrics.swarm("02", "360p");
        one.update(&Stats {
            bytes_uploaded: 10,
            ..Stats::default()
        });
        two.update(&Stats {
            bytes_uploaded: 20,
            ..Stats::default()
        });
        let text = metrics.render();
        assert_eq!(
            sample(
                &text,
                "ppspp_seed_bytes_sent_total{swarm=\"01\",name=\"720p\"}"
            ),
            Some(10.0)
        );
        assert_eq!(
            sample(
                &text,
                "ppspp_seed_bytes_sent_total{swarm=\"02\",name=\"360p\"}"
            ),
            Some(20.0)
        );
    }
}
