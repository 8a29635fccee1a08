//! One client connection: a single task that reads frames, writes replies and queued
//! messages, pings, and enforces the rate limit and the idle timeout.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket};
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::{Instant, timeout};

use crate::Shared;
use crate::ip_limits::IpSlot;
use crate::locality::Locality;
use crate::mailbox::Mailbox;
use crate::protocol::{
    ClientMessage, ErrorCode, PROTOCOL_VERSION, ServerMessage, close_code, parse_client,
    undelivered, valid_swarm_id,
};
use crate::registry::{Outbound, Relayed};
use crate::report::{Growth, ReportState};

/// Read buffer of each connection. Signaling frames are small; tungstenite's 128 KiB
/// default would dominate the memory of an idle client.
pub(crate) const READ_BUFFER: usize = 4096;

/// After the server closes a connection it keeps reading (and discarding) for at most this
/// long, so the client receives the error and close frame instead of a TCP reset.
const DRAIN: Duration = Duration::from_secs(2);

/// How long a connection whose input failed stays open after the close frame, so the
/// client can read the frames before the TCP reset that unread input causes.
const LINGER: Duration = Duration::from_millis(500);

/// The WebSocket layer's own frame limit: frames between `max_message_bytes` and this are
/// read whole and answered with `too-large`; bigger ones fail in the WebSocket layer.
pub(crate) fn transport_limit(max_message_bytes: usize) -> usize {
    max_message_bytes.saturating_mul(4).max(64 * 1024)
}

/// A token bucket: `rate` tokens a second, at most `burst` banked.
struct Bucket {
    tokens: f64,
    rate: f64,
    burst: f64,
    last: Instant,
}

impl Bucket {
    fn new(rate: f64, burst: f64) -> Self {
        Bucket {
            tokens: burst,
            rate,
            burst,
            last: Instant::now(),
        }
    }

    fn take(&mut self) -> bool {
        let now = Instant::now();
        let refill = now.duration_since(self.last).as_secs_f64() * self.rate;
        self.tokens = (self.tokens + refill).min(self.burst);
        self.last = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

struct Joined {
    peer_id: String,
    mailbox: Arc<Mailbox>,
    swarm: Arc<str>,
    report: ReportState,
}

/// How a connection ends.
enum End {
    /// The client closed or the socket failed: nothing more to send.
    Gone,
    /// The server closes with this code and reason (after any error already sent).
    Close(u16, Utf8Bytes),
}

enum Event {
    Shutdown,
    Idle,
    Queued(Option<Outbound>),
    Frame(Option<Result<Message, axum::Error>>),
    Ping,
}

async fn next_queued(joined: &mut Option<Joined>) -> Option<Outbound> {
    match joined {
        Some(j) => j.mailbox.next().await,
        None => std::future::pending().await,
    }
}

struct Conn {
    ws: WebSocket,
    shared: Arc<Shared>,
    joined: Option<Joined>,
    /// The WebSocket layer returned an error: nothing more can be read.
    read_failed: bool,
    /// Where the client is, for the samples it gets and the ones it is in.
    locality: Locality,
}

impl Conn {
    /// Sends one frame within the write timeout. `false` if the socket is unusable.
    async fn send(&mut self, msg: Message) -> bool {
        let limit = self.shared.config.write_timeout;
        match timeout(limit, self.ws.send(msg)).await {
            Ok(Ok(())) => true,
            Ok(Err(_)) => false,
            Err(_) => {
                // The client does not read: its TCP buffers are full.
                tracing::info!(peer = ?self.joined.as_ref().map(|j| &j.peer_id), "write timed out; dropping slow reader");
                self.shared.metrics.slow_reader_dropped();
                false
            }
        }
    }

    async fn send_json(&mut self, msg: &ServerMessage) -> bool {
        self.send(Message::Text(msg.to_json().into())).await
    }

    /// Sends an error; for a fatal one returns how to close.
    async fn error(&mut self, msg: ServerMessage) -> Result<(), End> {
        // A fatal error closes with its close code, the code's name as the reason.
        let close = match &msg {
            ServerMessage::Error { code, .. } => {
                self.shared.metrics.error_sent(code.as_str());
                code.close_code()
                    .map(|close| End::Close(close, Utf8Bytes::from(code.as_str())))
            }
            _ => None,
        };
        if !self.send_json(&msg).await {
            return Err(End::Gone);
        }
        match close {
            Some(end) => Err(end),
            None => Ok(()),
        }
    }

    async fn fail(&mut self, code: ErrorCode, message: impl Into<String>) -> Result<(), End> {
        self.error(ServerMessage::error(code, message)).await
    }

    async fn leave_room(&mut self) {
        if let Some(j) = self.joined.take() {
            if j.report.reported() {
                self.shared.metrics.reporter_left(&j.swarm);
            }
            self.shared.rooms.leave(&j.peer_id).await;
            tracing::debug!(peer = %j.peer_id, "left");
        }
    }

    async fn on_text(&mut self, text: &str) -> Result<(), End> {
        let max = self.shared.config.max_message_bytes;
        if text.len() > max {
            return self
                .fail(
                    ErrorCode::TooLarge,
                    format!("frame of {} bytes exceeds the limit of {max}", text.len()),
                )
                .await;
        }
        let msg = match parse_client(text) {
            Ok(m) => m,
            Err(e) => return self.fail(e.code(), e.message()).await,
        };
        match msg {
            ClientMessage::Join { v, swarm } => self.on_join(v, swarm).await,
            ClientMessage::Signal { to, data } => {
                let Some(j) = &self.joined else {
                    return self.fail(ErrorCode::NotJoined, "join a room first").await;
                };
                let mut text = ServerMessage::Signal {
                    from: j.peer_id.clone(),
                    data,
                }
                .to_json();
                // Queued bytes are charged by length: do not hold spare capacity.
                text.shrink_to_fit();
                let relayed = self.shared.rooms.relay(&j.peer_id, &to, text.into()).await;
                self.shared.metrics.relayed(relayed);
                let msg = match relayed {
                    Relayed::Delivered => return Ok(()),
                    Relayed::UnknownPeer => {
                        undelivered(ErrorCode::UnknownPeer, "no such peer in this room", to)
                    }
                    Relayed::Busy(why) => undelivered(ErrorCode::PeerBusy, why.explain(), to),
                    Relayed::Unavailable => undelivered(
                        ErrorCode::PeerBusy,
                        "the server cannot reach its room store now; not delivered",
                        to,
                    ),
                };
                self.error(msg).await
            }
            ClientMessage::Leave => {
                if self.joined.is_none() {
                    return self.fail(ErrorCode::NotJoined, "not in a room").await;
                }
                self.leave_room().await;
                Ok(())
            }
            ClientMessage::Ice => {
                let Some(j) = &self.joined else {
                    return self.fail(ErrorCode::NotJoined, "join a room first").await;
                };
                // As in the welcome, with credentials issued now for the current peer id.
                let reply = ServerMessage::IceServers {
                    ice_servers: self.ice_servers(&j.peer_id),
                };
                if self.send_json(&reply).await {
                    Ok(())
                } else {
                    Err(End::Gone)
                }
            }
            ClientMessage::Report {
                bytes,
                stalls,
                stall_ms,
            } => {
                let every = self.shared.config.report_every;
                let Some(j) = &mut self.joined else {
                    return self.fail(ErrorCode::NotJoined, "join a room first").await;
                };
                if every.is_zero() {
                    return self
                        .fail(ErrorCode::BadReport, "this server takes no reports")
                        .await;
                }
                let first = !j.report.reported();
                let totals = Growth {
                    bytes,
                    stalls,
                    stall_ms,
                };
                match j.report.take(Instant::now(), every, totals) {
                    Ok(grew) => {
                        self.shared.metrics.reported(&j.swarm, first, grew);
                        Ok(())
                    }
                    Err(why) => {
                        self.shared.metrics.report_refused();
                        self.fail(ErrorCode::BadReport, format!("report not taken: {why}"))
                            .await
                    }
                }
            }
        }
    }

    async fn on_join(&mut self, v: u64, swarm: String) -> Result<(), End> {
        if v != PROTOCOL_VERSION {
            let mut msg = ServerMessage::error(
                ErrorCode::UnsupportedVersion,
                format!("protocol version {v} is not supported"),
            );
            if let ServerMessage::Error { supported, .. } = &mut msg {
                *supported = Some(vec![PROTOCOL_VERSION]);
            }
            self.shared.metrics.join_refused("unsupported-version");
            return self.error(msg).await;
        }
        if self.joined.is_some() {
            self.shared.metrics.join_refused("already-joined");
            return self
                .fail(ErrorCode::AlreadyJoined, "already in a room; leave first")
                .await;
        }
        if !valid_swarm_id(&swarm) {
            self.shared.metrics.join_refused("bad-swarm");
            return self
                .fail(
                    ErrorCode::BadSwarm,
                    "swarm must be a Merkle root in lowercase hex (40 or 64 digits)",
                )
                .await;
        }
        match self.shared.rooms.join(&swarm, &self.locality).await {
            Ok(crate::rooms::Joined {
                peer_id,
                mailbox,
                sample: peers,
                held,
            }) => {
                tracing::debug!(peer = %peer_id, %swarm, held, "joined");
                self.joined = Some(Joined {
                    peer_id: peer_id.clone(),
                    mailbox,
                    swarm: Arc::from(swarm.as_str()),
                    report: ReportState::new(Instant::now()),
                });
                self.shared.metrics.joined();
                let welcome = ServerMessage::Welcome {
                    v: PROTOCOL_VERSION,
                    swarm,
                    ice_servers: crate::ice::welcome_field(self.ice_servers(&peer_id)),
                    report_every: self.shared.config.report_every_secs(),
                    p2p_from: held.then_some(self.shared.config.p2p_min_peers as u64),
                    peer_id,
                    peers,
                };
                if self.send_json(&welcome).await {
                    Ok(())
                } else {
                    Err(End::Gone)
                }
            }
            Err(refused) => {
                self.shared.metrics.join_refused(refused.0.as_str());
                self.fail(refused.0, refused.1).await
            }
        }
    }

    /// The ICE servers for `peer_id`, with a TURN credential issued now if TURN is set up.
    fn ice_servers(&self, peer_id: &str) -> Vec<crate::protocol::IceServer> {
        let servers = crate::ice::for_peer(&self.shared.config, peer_id);
        if servers.iter().any(|s| s.credential.is_some()) {
            self.shared.metrics.turn_credential_issued();
        }
        servers
    }

    /// Handles one received frame. `Err` ends the connection.
    async fn on_frame(
        &mut self,
        frame: Option<Result<Message, axum::Error>>,
        bucket: &mut Bucket,
    ) -> Result<(), End> {
        let msg = match frame {
            None => return Err(End::Gone),
            Some(Err(e)) => {
                tracing::debug!(error = %e, "read failed");
                self.read_failed = true;
                // The WebSocket layer refuses frames over its own limit; say why if the
                // socket still takes a write.
                let too_big = e.to_string().to_ascii_lowercase();
                if too_big.contains("too long") || too_big.contains("too big") {
                    let max = self.shared.config.max_message_bytes;
                    return self
                        .fail(
                            ErrorCode::TooLarge,
                            format!("frame exceeds the limit of {max}"),
                        )
                        .await;
                }
                return Err(End::Gone);
            }
            Some(Ok(m)) => m,
        };
        match msg {
            Message::Pong(_) => Ok(()),
            Message::Close(_) => Ok(()), // the reply is sent by the WebSocket layer; recv ends next
            other => {
                if !bucket.take() {
                    let cfg = &self.shared.config;
                    let message = format!(
                        "more than {} messages a second (burst {})",
                        cfg.rate_per_sec, cfg.rate_burst
                    );
                    return self.fail(ErrorCode::RateLimited, message).await;
                }
                match other {
                    Message::Text(t) => self.on_text(t.as_str()).await,
                    Message::Binary(_) => {
                        self.fail(
                            ErrorCode::BinaryFrame,
                            "binary frames are not part of the protocol",
                        )
                        .await
                    }
                    _ => Ok(()), // a ping: answered by the WebSocket layer
                }
            }
        }
    }

    /// Sends a close frame and reads until the client's close (or `DRAIN` passes), so our
    /// last frames are not lost to a reset.
    async fn close(&mut self, code: u16, reason: Utf8Bytes) {
        let frame = CloseFrame { code, reason };
        if !self.send(Message::Close(Some(frame))).await {
            return;
        }
        if self.read_failed {
            // The WebSocket layer can read no more, and closing now would reset the
            // connection (unread input) before the client reads our last frames.
            tokio::time::sleep(LINGER).await;
            return;
        }
        let _ = timeout(DRAIN, async {
            while let Some(Ok(_)) = self.ws.recv().await {}
        })
        .await;
    }
}

/// Runs one connection to its end. `_permit` and `_ip` are the connection's slots (of all
/// connections and of its address), freed on return.
pub(crate) async fn run(
    ws: WebSocket,
    shared: Arc<Shared>,
    _permit: OwnedSemaphorePermit,
    _ip: IpSlot,
    client: IpAddr,
) {
    let cfg = shared.config.clone();
    let mut shutdown = shared.shutdown.clone();
    let locality = shared.config.judge().locate(client);
    let mut conn = Conn {
        ws,
        shared,
        joined: None,
        read_failed: false,
        locality,
    };
    let mut bucket = Bucket::new(cfg.rate_per_sec, cfg.rate_burst);
    let mut ping = tokio::time::interval_at(Instant::now() + cfg.ping_interval, cfg.ping_interval);
    ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let idle = tokio::time::sleep(cfg.idle_timeout);
    tokio::pin!(idle);
    tracing::debug!("connection open");

    let end = loop {
        // Unbiased: a busy queue must not starve reading (and so pongs) or the reverse.
        let event = tokio::select! {
            _ = shutdown.changed() => Event::Shutdown,
            _ = &mut idle => Event::Idle,
            q = next_queued(&mut conn.joined) => Event::Queued(q),
            f = conn.ws.recv() => Event::Frame(f),
            _ = ping.tick() => Event::Ping,
        };
        let step = match event {
            Event::Shutdown => Err(End::Close(
                close_code::GOING_AWAY,
                Utf8Bytes::from_static("server shutting down"),
            )),
            Event::Idle => {
                let secs = cfg.idle_timeout.as_secs_f64();
                conn.fail(
                    ErrorCode::IdleTimeout,
                    format!("nothing received for {secs} s"),
                )
                .await
            }
            Event::Queued(Some(text)) => {
                if conn.send(Message::Text(text)).await {
                    Ok(())
                } else {
                    Err(End::Gone)
                }
            }
            Event::Queued(None) => {
                // The registry dropped us: not even a notice fit in our queue.
                tracing::info!(peer = ?conn.joined.as_ref().map(|j| &j.peer_id), "queue full; dropping slow reader");
                conn.shared.metrics.slow_reader_dropped();
                if let Some(j) = conn.joined.take()
                    && j.report.reported()
                {
                    conn.shared.metrics.reporter_left(&j.swarm);
                }
                Err(End::Close(
                    close_code::POLICY,
                    Utf8Bytes::from_static("slow reader"),
                ))
            }
            Event::Frame(f) => {
                let active = matches!(f, Some(Ok(_)));
                let r = conn.on_frame(f, &mut bucket).await;
                if active {
                    idle.as_mut().reset(Instant::now() + cfg.idle_timeout);
                }
                r
            }
            Event::Ping => {
                if conn.send(Message::Ping(Default::default())).await {
                    Ok(())
                } else {
                    Err(End::Gone)
                }
            }
        };
        if let Err(end) = step {
            break end;
        }
    };
    conn.leave_room().await;
    match end {
        End::Gone => tracing::debug!("connection gone"),
        End::Close(code, reason) => {
            tracing::debug!(code, reason = reason.as_str(), "closing connection");
            conn.close(code, reason).await;
        }
    }
}
