//! `ppspp-signal`: the WebSocket signaling server and tracker of ppspp-web.
//!
//! Peers of one swarm (one piece of content, named by its Merkle root) meet in a room:
//! `join` tells a newcomer its server-assigned peer id and a sample of the peers
//! already there; the newcomer then opens WebRTC connections to them by relaying
//! offers, answers and ICE candidates through `signal` messages. The protocol is specified
//! in `docs/SIGNALING.md`.
//!
//! Run it in-process (tests of other crates do) with [`spawn`], or with [`serve`] on a
//! listener of your own:
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! let server = ppspp_signal::spawn(
//!     "127.0.0.1:0".parse().expect("address"),
//!     ppspp_signal::Config::default(),
//! )
//! .await?;
//! let url = server.url(); // ws://127.0.0.1:PORT/ws
//! // ... connect peers to `url` ...
//! server.shutdown().await?;
//! # Ok(()) }
//! ```

mod cluster;
mod config;
mod conn;
mod http_conns;
pub mod ice;
mod ip_limits;
mod locality;
mod mailbox;
mod metrics;
pub mod protocol;
mod redis_config;
mod registry;
mod report;
mod rooms;
mod send_buffer;

use std::future::Future;
use std::io;
use std::sync::Arc;

use axum::Json;
use axum::Router;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{Extension, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use std::net::SocketAddr;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, oneshot, watch};
use tokio::task::JoinHandle;

pub use config::Config;
pub use ice::TurnSecret;
pub use locality::AsTable;
pub use protocol::{PROTOCOL_VERSION, WS_PATH};
pub use redis_config::RedisConfig;

/// The path of the health endpoint.
pub const HEALTH_PATH: &str = "/health";

/// The path of the Prometheus metrics (docs/DEPLOY.md lists them).
pub const METRICS_PATH: &str = "/metrics";

pub(crate) struct Shared {
    pub(crate) config: Config,
    pub(crate) rooms: rooms::Rooms,
    pub(crate) metrics: Arc<metrics::Metrics>,
    /// Connections per client address.
    ip_limits: Arc<ip_limits::IpLimits>,
    /// One permit per open WebSocket connection.
    connections: Arc<Semaphore>,
    /// Capacity of `connections`.
    max_connections: u32,
    /// Becomes `true` when the server starts shutting down.
    pub(crate) shutdown: watch::Receiver<bool>,
}

impl Shared {
    fn open_connections(&self) -> usize {
        (self.max_connections as usize).saturating_sub(self.connections.available_permits())
    }
}

/// Serves signaling on `listener` until `shutdown` resolves: WebSocket clients on
/// [`WS_PATH`] (`/ws`), health on [`HEALTH_PATH`] (`/health`), Prometheus metrics on
/// [`METRICS_PATH`] (`/metrics`).
///
/// On shutdown it stops accepting, sends every client a close frame (1001, going away) and
/// returns once all connections are closed or `config.shutdown_grace` has passed.
/// Connections are served over HTTP/1.1 (WebSocket upgrades need nothing else).
/// Fails at once with `InvalidInput` if `config` does not validate, and with
/// `ConnectionRefused` if `config.redis` names a Redis that cannot be used now (later
/// outages are waited out: joins get `unavailable` meanwhile).
pub async fn serve(
    listener: TcpListener,
    config: Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    config
        .validate()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let max_connections = u32::try_from(config.max_connections)
        .unwrap_or(u32::MAX)
        .min(u32::try_from(Semaphore::MAX_PERMITS).unwrap_or(u32::MAX));
    let (stop_tx, stop_rx) = watch::channel(false);
    let limits = registry::Limits {
        budget: mailbox::Budget::new(
            config.outbound_queue_bytes,
            config.outbound_queue_bytes_per_sender,
        ),
        max_rooms: config.max_rooms,
        max_peers_per_room: config.max_peers_per_room,
        sample_size: config.sample_size,
        random_places: locality::random_places(config.sample_size, config.random_sample_share),
        p2p_min_peers: config.p2p_min_peers,
        room_notice_rate: config.room_notice_rate,
    };
    let metrics = Arc::new(metrics::Metrics::new());
    let rooms = match &config.redis {
        None => rooms::Rooms::Memory(registry::Registry::new(limits)),
        Some(redis) => {
            rooms::Rooms::Redis(cluster::Cluster::connect(redis, limits, metrics.clone()).await?)
        }
    };
    let shared = Arc::new(Shared {
        config,
        rooms,
        metrics,
        ip_limits: Arc::default(),
        connections: Arc::new(Semaphore::new(max_connections as usize)),
        max_connections,
        shutdown: stop_rx,
    });
    let app = Router::new()
        .route(WS_PATH, get(ws_handler))
        .route(HEALTH_PATH, get(health))
        .route(METRICS_PATH, get(scrape))
        .with_state(shared.clone());
    if let Ok(addr) = listener.local_addr() {
        tracing::info!(%addr, "serving signaling");
    }
    let cfg = &shared.config;
    if !cfg.stun_urls.is_empty() || !cfg.turn_urls.is_empty() {
        // Never the secret.
        tracing::info!(
            stun_urls = cfg.stun_urls.len(),
            turn_urls = cfg.turn_urls.len(),
            turn_credential_ttl_s = cfg.turn_credential_ttl.as_secs(),
            "welcomes carry iceServers"
        );
    }
    let http_capacity = u32::try_from(cfg.max_http_connections)
        .unwrap_or(u32::MAX)
        .min(u32::try_from(Semaphore::MAX_PERMITS).unwrap_or(u32::MAX));
    let http_slots = Arc::new(Semaphore::new(http_capacity as usize));
    let http_conns = Arc::new(http_conns::HttpConns::default());
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            biased;
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        // The address's own limit first, so one address cannot take every server-wide slot.
        let Some(ip_slot) = shared.ip_limits.try_acquire(
            peer.ip(),
            ip_limits::Kind::Http,
            cfg.max_http_connections_per_ip,
        ) else {
            tracing::debug!(%peer, "connection refused: max_http_connections_per_ip reached");
            shared
                .metrics
                .refused(metrics::RefusedBy::HttpConnectionsPerIp);
            continue;
        };
        // Every slot taken: the oldest connection makes room if it has been open long
        // enough (`http_conns`), and this one waits for its slot.
        let slot = match http_slots.clone().try_acquire_owned() {
            Ok(slot) => Some(slot),
            Err(_) if http_conns.evict_oldest() => None,
            Err(_) => {
                tracing::debug!(%peer, "connection refused: max_http_connections reached");
                shared.metrics.refused(metrics::RefusedBy::HttpConnections);
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        if let Err(e) = send_buffer::limit_unsent(&stream) {
            tracing::debug!(%peer, error = %e, "TCP_NOTSENT_LOWAT not set");
        }
        let service = TowerToHyperService::new(app.clone().layer(Extension(ClientAddr(peer))));
        let conn = http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(cfg.http_header_timeout)
            .serve_connection(TokioIo::new(stream), service)
            .with_upgrades();
        let mut stop = shared.shutdown.clone();
        let (slots, conns) = (http_slots.clone(), http_conns.clone());
        tokio::spawn(async move {
            let slot = match slot {
                Some(slot) => slot,
                None => match tokio::time::timeout(http_conns::EVICT_AFTER, slots.acquire_owned())
                    .await
                {
                    Ok(Ok(slot)) => slot,
                    _ => return,
                },
            };
            let registered = conns.register();
            let mut evicted = registered.evicted;
            let mut conn = std::pin::pin!(conn);
            let result = tokio::select! {
                r = conn.as_mut() => r,
                _ = stop.changed() => {
                    // Finish the request in flight, then close; idle ones close now.
                    conn.as_mut().graceful_shutdown();
                    conn.await
                }
                _ = &mut evicted => {
                    tracing::debug!(%peer, "HTTP connection closed to make room for a newer one");
                    Ok(())
                }
            };
            conns.unregister(registered.id);
            if let Err(e) = result {
                tracing::trace!(%peer, error = %e, "HTTP connection ended with an error");
            }
            // Also when the connection was upgraded: WebSocket connections are counted
            // by their own permits.
            drop(slot);
            drop(ip_slot);
        });
    }
    drop(listener);
    tracing::info!("shutting down");
    let _ = stop_tx.send(true);
    let grace = shared.config.shutdown_grace;
    let deadline = tokio::time::Instant::now() + grace;
    // HTTP connections finish their request in flight; idle ones close now.
    let http_all = http_slots.acquire_many(http_capacity);
    if tokio::time::timeout_at(deadline, http_all).await.is_err() {
        tracing::warn!("shutdown grace period over with HTTP connections still open");
    }
    // WebSocket connections: each task has seen the shutdown and is closing its socket.
    let all = shared.connections.acquire_many(max_connections);
    match tokio::time::timeout_at(deadline, all).await {
        Ok(_) => tracing::info!("all connections closed"),
        Err(_) => tracing::warn!(
            open = shared.open_connections(),
            "shutdown grace period over with connections still open"
        ),
    }
    Ok(())
}

/// A server started by [`spawn`], running on the current tokio runtime.
#[derive(Debug)]
pub struct Running {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<io::Result<()>>,
}

impl Running {
    /// The address it listens on (the real port when bound to port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The WebSocket URL clients connect to, e.g. `ws://127.0.0.1:41227/ws`.
    pub fn url(&self) -> String {
        format!("ws://{}{WS_PATH}", self.addr)
    }

    /// Shuts the server down gracefully and waits for [`serve`] to return.
    pub async fn shutdown(mut self) -> io::Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match (&mut self.task).await {
            Ok(result) => result,
            Err(e) => Err(io::Error::other(e)),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // Dropped without `shutdown`: stop it anyway (gracefully, in the background).
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Binds `bind` (e.g. `127.0.0.1:0`) and runs [`serve`] in a task on the current tokio
/// runtime: the in-process server for other crates' tests.
pub async fn spawn(bind: SocketAddr, config: Config) -> io::Result<Running> {
    config
        .validate()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let listener = TcpListener::bind(bind).await?;
    let addr = listener.local_addr()?;
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(serve(listener, config, async move {
        let _ = stopped.await;
    }));
    Ok(Running {
        addr,
        stop: Some(stop),
        task,
    })
}

fn unavailable(message: &str) -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        Json(serde_json::json!({ "status": "unavailable", "message": message })),
    )
        .into_response()
}

/// The TCP peer address of a request's connection.
#[derive(Debug, Clone, Copy)]
struct ClientAddr(SocketAddr);

async fn ws_handler(
    State(shared): State<Arc<Shared>>,
    Extension(ClientAddr(peer)): Extension<ClientAddr>,
    headers: axum::http::HeaderMap,
    ws: WebSocketUpgrade,
) -> Response {
    let client = client_ip(&shared.config, &headers, peer);
    if *shared.shutdown.borrow() {
        return unavailable("shutting down");
    }
    let Some(ip_slot) = shared.ip_limits.try_acquire(
        peer.ip(),
        ip_limits::Kind::Ws,
        shared.config.max_connections_per_ip,
    ) else {
        tracing::debug!(%peer, "connection refused: max_connections_per_ip reached");
        shared.metrics.refused(metrics::RefusedBy::ConnectionsPerIp);
        return unavailable("too many connections from this address");
    };
    let Ok(permit) = shared.connections.clone().try_acquire_owned() else {
        tracing::info!("connection refused: max_connections reached");
        shared.metrics.refused(metrics::RefusedBy::Connections);
        return unavailable("too many connections");
    };
    let cfg = &shared.config;
    // Frames up to the transport limit are read and answered with `too-large`; anything
    // bigger is cut off by the WebSocket layer, and the server still tries to say why.
    let transport_limit = conn::transport_limit(cfg.max_message_bytes);
    ws.read_buffer_size(conn::READ_BUFFER)
        .write_buffer_size(0)
        .max_write_buffer_size(transport_limit * 2)
        .max_message_size(transport_limit)
        .max_frame_size(transport_limit)
        .on_upgrade(move |socket| conn::run(socket, shared, permit, ip_slot, client))
}

/// The client's address: from the configured header a proxy sets (its last address), or
/// the TCP peer's.
fn client_ip(
    config: &Config,
    headers: &axum::http::HeaderMap,
    peer: SocketAddr,
) -> std::net::IpAddr {
    let Some(name) = &config.client_ip_header else {
        return peer.ip();
    };
    let from_header = headers
        .get(name.as_str())
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.rsplit(',').next())
        .and_then(|v| v.trim().parse().ok());
    match from_header {
        Some(ip) => ip,
        None => {
            tracing::debug!(%peer, header = %name, "no client address in the header; using the connection's");
            peer.ip()
        }
    }
}

async fn health(State(shared): State<Arc<Shared>>) -> Response {
    let counts = shared.rooms.counts();
    let (backend, backend_up) = shared.rooms.backend();
    let status = if *shared.shutdown.borrow() {
        "shutting-down"
    } else if !backend_up {
        "unavailable"
    } else {
        "ok"
    };
    let body = Json(serde_json::json!({
        "status": status,
        "v": PROTOCOL_VERSION,
        "rooms": counts.rooms,
        "peers": counts.peers,
        "connections": shared.open_connections(),
        "queued_bytes": shared.rooms.queued_bytes(),
        "rooms_in": backend,
    }));
    // A load balancer takes an instance that cannot reach Redis out of rotation.
    let code = if backend_up {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (code, body).into_response()
}

async fn scrape(State(shared): State<Arc<Shared>>) -> Response {
    let counts = shared.rooms.counts();
    let text = shared.metrics.render(metrics::Now {
        rooms: counts.rooms,
        peers: counts.peers,
        room_sizes: shared.rooms.room_sizes(),
        connections: shared.open_connections(),
        queued_bytes: shared.rooms.queued_bytes(),
        backend_up: shared.rooms.backend().1,
    });
    (
        [(axum::http::header::CONTENT_TYPE, metrics::CONTENT_TYPE)],
        text,
    )
        .into_response()
}
