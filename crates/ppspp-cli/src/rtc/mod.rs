//! WebRTC data channels over a sans-IO WebRTC stack (str0m by default; webrtc-rs for the
//! comparison in docs/ARCHITECTURE.md), for the same tokio loop that drives the engine.
//!
//! One UDP socket carries every peer connection: incoming datagrams go to the connection
//! that accepts them. Offers, answers and candidates travel through the signaling client
//! (docs/SIGNALING.md). Each peer connection has one data channel, unordered with
//! `maxRetransmits: 0`, carrying one PPSPP datagram per message: PPSPP does its own
//! retransmission and congestion control, so SCTP must not.
//!
//! This file holds `RtcTransport` itself: its state, its public calls and the draining of
//! each connection's output; each concern it wires together has a file of its own.

mod config;
mod error;
mod failover;
mod gathering;
mod negotiation;
mod peer_conn;
mod rejoin;
mod routing;
mod selected_pair;
mod send_queue;
mod str0m_conn;
#[cfg(feature = "webrtc-rs")]
mod webrtc_rs_conn;

use crate::gather::Gatherer;
use crate::signal::SignalClient;
use crate::udp::RECV_BUFFER;
pub use config::{DEFAULT_DATA_BATCH_BYTES, MAX_DATA_BATCH_BYTES, RtcConfig, max_conns_for};
pub use error::RtcError;
use failover::Failover;
pub use peer_conn::Stack;
use peer_conn::{LocalCandidate, Output, PeerConn};
use ppspp_signal_protocol::ServerMessage;
use selected_pair::{RemoteCandidate, is_dtls};
use send_queue::SendQueue;
pub use send_queue::{MAX_BUFFERED, MAX_QUEUED};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::net::UdpSocket;

/// A peer connection whose channel is not open after this long is given up.
const OPEN_TIMEOUT: Duration = Duration::from_secs(20);

/// What happened to a peer connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RtcEvent {
    /// The data channel opened; `initiator` is true when we sent the offer. `data_batch`:
    /// how long a message of several chunks to it may be (0: one chunk per message).
    Open {
        id: u64,
        initiator: bool,
        data_batch: usize,
    },
    /// One message arrived on the data channel.
    Data { id: u64, data: Vec<u8> },
    /// The connection is gone (`was_open`: its channel had opened).
    Closed { id: u64, was_open: bool },
}

struct Conn {
    pc: Box<dyn PeerConn>,
    remote: String,
    initiator: bool,
    open: bool,
    /// The longest message of several chunks the remote said it reads (0: none).
    remote_data_batch: usize,
    timeout: Instant,
    created: Instant,
    dead: bool,
    /// Messages not yet handed to the WebRTC stack.
    queue: SendQueue,
    /// The remote's candidates (from its SDP and trickled, at most
    /// [`MAX_REMOTE_CANDIDATES`](selected_pair::MAX_REMOTE_CANDIDATES)), to name the selected pair's when the channel opens.
    remote_candidates: Vec<RemoteCandidate>,
    /// Our address and the remote's that DTLS last went over before the channel opened:
    /// the selected pair.
    path: Option<(SocketAddr, SocketAddr)>,
}

/// Something to wait for, returned by [`RtcTransport::recv`].
pub enum Incoming {
    Datagram(usize, SocketAddr),
    Signal(Option<ServerMessage>),
    /// An attempt to join again (after the signaling connection dropped) ended.
    Rejoined(Box<Result<(SignalClient, usize), crate::signal::JoinAnyError>>),
}

/// Every WebRTC peer connection of this process.
pub struct RtcTransport {
    socket: UdpSocket,
    local: SocketAddr,
    signal: Option<SignalClient>,
    failover: Failover,
    conns: BTreeMap<u64, Conn>,
    by_remote: HashMap<String, u64>,
    /// Which connection took the last datagram from an address to one of ours: asking
    /// every connection whether it accepts a datagram costs a scan per datagram, which
    /// with hundreds of peers was most of a seeder's time.
    routes: HashMap<(SocketAddr, SocketAddr), u64>,
    next_id: u64,
    events: VecDeque<RtcEvent>,
    outbox: Vec<(SocketAddr, Vec<u8>)>,
    sig_out: Vec<(String, Value)>,
    buf: Vec<u8>,
    /// Messages dropped because the channel's buffer was full.
    pub dropped: u64,
    pub sent: u64,
    pub received: u64,
    /// A connection not open after this long is given up.
    open_timeout: Duration,
    config: RtcConfig,
    /// STUN and TURN clients, once [`gather`](Self::gather) started them.
    gatherer: Option<Gatherer>,
    /// The server-reflexive and relayed candidates learnt so far (every new connection
    /// gets them, and those already made get them as they come).
    learnt: Vec<LocalCandidate>,
    /// When the STUN/TURN clients next want `handle_timeout` (read after each of their turns).
    gatherer_timeout: Option<Instant>,
}

impl RtcTransport {
    /// Binds the UDP socket for every peer connection. `bind` must name a specific IP: it is
    /// advertised as the host candidate. When the signaling connection drops, it joins
    /// `room` again at the same server (see [`fail_over_to`](Self::fail_over_to)).
    pub fn bind(
        bind: SocketAddr,
        signal: SignalClient,
        room: &str,
        config: RtcConfig,
    ) -> Result<RtcTransport, RtcError> {
        if bind.ip().is_unspecified() {
            return Err(RtcError::UnspecifiedBind(bind));
        }
        let socket =
            crate::udp::bind(bind).map_err(|error| RtcError::Bind { addr: bind, error })?;
        let local = socket.local_addr().map_err(RtcError::LocalAddr)?;
        Ok(RtcTransport {
            socket,
            local,
            failover: Failover::new(signal.url.clone(), room),
            signal: Some(signal),
            conns: BTreeMap::new(),
            by_remote: HashMap::new(),
            routes: HashMap::new(),
            next_id: 1,
            events: VecDeque::new(),
            outbox: Vec::new(),
            sig_out: Vec::new(),
            buf: vec![0; RECV_BUFFER],
            dropped: 0,
            sent: 0,
            received: 0,
            open_timeout: OPEN_TIMEOUT,
            config,
            gatherer: None,
            learnt: Vec::new(),
            gatherer_timeout: None,
        })
    }

    /// The address of the shared UDP socket.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The signaling server in use (or used last).
    pub fn signal_url(&self) -> &str {
        &self.failover.urls[self.failover.index]
    }

    /// Our peer id at the signaling server.
    pub fn peer_id(&self) -> Option<&str> {
        self.signal.as_ref().map(|s| s.peer_id.as_str())
    }

    /// The peers of the room's `welcome` sample.
    pub fn welcome_peers(&self) -> Vec<String> {
        self.signal
            .as_ref()
            .map(|s| s.peers.clone())
            .unwrap_or_default()
    }

    fn insert(
        &mut self,
        remote: &str,
        pc: Box<dyn PeerConn>,
        initiator: bool,
        now: Instant,
    ) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.conns.insert(
            id,
            Conn {
                pc,
                remote: remote.to_string(),
                initiator,
                open: false,
                remote_data_batch: 0,
                timeout: now,
                created: now,
                dead: false,
                queue: SendQueue::default(),
                remote_candidates: Vec::new(),
                path: None,
            },
        );
        self.by_remote.insert(remote.to_string(), id);
        id
    }

    /// An offer or answer: the SDP and what we say of ourselves.
    fn about_us(&self, kind: &str, sdp: &str) -> serde_json::Value {
        let mut data = json!({"kind": kind, "sdp": sdp, "seeder": self.config.seeder});
        if self.config.data_batch_bytes > 0 {
            data["dataBatch"] = json!(self.config.data_batch_bytes);
        }
        data
    }

    /// Sends an offer to `peer` (a signaling peer id) with our data channel.
    pub fn offer(&mut self, peer: &str) -> Result<u64, RtcError> {
        if let Some(&id) = self.by_remote.get(peer) {
            return Ok(id);
        }
        let now = Instant::now();
        let (pc, offer) = peer_conn::offer(self.config.stack, now, &self.local_candidates())?;
        let id = self.insert(peer, pc, true, now);
        self.sig_out
            .push((peer.to_string(), self.about_us("offer", &offer)));
        self.drain(id);
        Ok(id)
    }

    /// Sends one message on `id`'s data channel. Returns false when it was dropped (no open
    /// channel, or the connection's queue is full).
    ///
    /// At most [`MAX_BUFFERED`] bytes are handed to the WebRTC stack; what does not fit waits in the
    /// connection's own queue (up to [`MAX_QUEUED`] bytes) until SCTP has sent enough. The
    /// engine's LEDBAT sees that wait as queuing delay and slows down, instead of seeing
    /// losses: SCTP's congestion window starts far smaller than the engine's burst on a
    /// fresh connection.
    pub fn send(&mut self, id: u64, data: &[u8]) -> bool {
        let Some(conn) = self.conns.get_mut(&id) else {
            return false;
        };
        if !conn.open || !conn.queue.push(data) {
            self.dropped += 1;
            return false;
        }
        self.sent += 1;
        self.drain(id);
        true
    }

    /// Closes connection `id` (a `Closed` event follows).
    pub fn close(&mut self, id: u64) {
        if let Some(c) = self.conns.get_mut(&id)
            && c.pc.close().is_err()
        {
            // It cannot be closed gracefully (SCTP shutdown, DTLS close_notify): drop it.
            c.dead = true;
        }
        self.drain(id);
    }

    /// Closes every connection and leaves the signaling room.
    pub async fn shutdown(&mut self) {
        let ids: Vec<u64> = self.conns.keys().copied().collect();
        for id in ids {
            self.close(id);
        }
        self.flush().await;
        if let Some(task) = self.failover.task.take() {
            task.abort();
        }
        if let Some(s) = self.signal.take() {
            s.close().await;
        }
    }

    /// One line per connection: buffered bytes, for diagnostics.
    pub fn debug_line(&mut self) -> String {
        let mut out = format!(
            "dropped={} sent={} received={}",
            self.dropped, self.sent, self.received
        );
        for (id, c) in self.conns.iter_mut() {
            if let Some(buffered) = c.pc.buffered_amount() {
                out += &format!(" #{id}:buffered={buffered},queued={}", c.queue.bytes());
            }
        }
        out
    }

    pub fn poll_event(&mut self) -> Option<RtcEvent> {
        self.events.pop_front()
    }

    /// The earliest instant some connection wants `handle_timeout`.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let conns = self
            .conns
            .values()
            .map(|c| match c.open {
                // Not open yet: also wake up to give it up in time.
                false => c.timeout.min(c.created + self.open_timeout),
                true => c.timeout,
            })
            .min();
        conns.into_iter().chain(self.gatherer_timeout).min()
    }

    pub fn handle_timeout(&mut self, now: Instant) {
        if let Some(g) = self.gatherer.as_mut() {
            g.handle_timeout(now);
            self.after_gatherer(now);
        }
        let ids: Vec<u64> = self.conns.keys().copied().collect();
        for id in ids {
            let Some(c) = self.conns.get_mut(&id) else {
                continue;
            };
            let expired = !c.open && now >= c.created + self.open_timeout;
            if expired || (now >= c.timeout && c.pc.handle_timeout(now).is_err()) {
                c.dead = true;
            }
            self.drain(id);
        }
    }

    /// Sends what the connections and the signaling exchange have queued.
    pub async fn flush(&mut self) {
        if let Some(g) = self.gatherer.as_mut() {
            while let Some((to, bytes)) = g.poll_transmit() {
                self.outbox.push((to, bytes.to_vec()));
            }
            self.gatherer_timeout = g.poll_timeout();
        }
        for (to, bytes) in self.outbox.drain(..) {
            // A failed send is a lost datagram.
            let _ = self.socket.send_to(&bytes, to).await;
        }
        if let Some(sig) = self.signal.as_mut() {
            for (to, data) in self.sig_out.drain(..) {
                if sig.signal(&to, data).await.is_err() {
                    break;
                }
            }
        }
        self.sig_out.clear();
    }

    /// Waits for a datagram or a signaling message. Cancel-safe.
    pub async fn recv(&mut self) -> Incoming {
        let socket = &self.socket;
        let buf = &mut self.buf;
        let signal = self.signal.as_mut();
        let sig = async move {
            match signal {
                Some(s) => s.recv().await,
                None => std::future::pending().await,
            }
        };
        let rejoin = self.failover.task.as_mut();
        let rejoined = async move {
            match rejoin {
                Some(task) => task.await.unwrap_or_else(|e| Err(e.into())),
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            r = socket.recv_from(buf) => match r {
                Ok((n, from)) => Incoming::Datagram(n, from),
                // ICMP errors and the like: nothing arrived.
                Err(_) => Incoming::Datagram(0, self.local),
            },
            m = sig => Incoming::Signal(m),
            r = rejoined => Incoming::Rejoined(Box::new(r)),
        }
    }

    /// Processes what [`recv`](Self::recv) returned, then whatever else already arrived.
    pub fn handle(&mut self, incoming: Incoming) {
        match incoming {
            Incoming::Datagram(n, from) => self.on_datagrams(n, from),
            Incoming::Signal(Some(msg)) => self.handle_signal(msg),
            Incoming::Signal(None) => self.on_signal_closed(),
            Incoming::Rejoined(result) => self.on_rejoined(*result),
        }
    }

    /// Drains connection `id`'s output until its next timeout, as the WebRTC stack requires
    /// after every mutation; removes it if it died.
    fn drain(&mut self, id: u64) {
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        while !conn.dead {
            match conn.pc.poll_output() {
                Output::Timeout(t) => {
                    conn.timeout = t;
                    // Hand the stack queued messages while its buffer has room; each write
                    // is a mutation, so drain again after it.
                    if conn.open
                        && let Some(written) = conn.queue.hand_one(conn.pc.as_mut())
                    {
                        if !written {
                            self.dropped += 1;
                        }
                        continue;
                    }
                    break;
                }
                Output::Transmit {
                    source,
                    destination,
                    data,
                } => {
                    // Only until the channel opens: the report is made then.
                    if !conn.open && is_dtls(&data) {
                        conn.path = Some((source, destination));
                    }
                    match self.gatherer.as_mut() {
                        // From a relayed candidate: through its TURN server.
                        Some(g) if g.is_relay(source) => {
                            g.send_relayed(Instant::now(), source, destination, &data);
                        }
                        _ => self.outbox.push((destination, data)),
                    }
                }
                Output::Open => {
                    if !conn.open {
                        conn.open = true;
                        if let Some((source, destination)) = conn.path {
                            let ours = match &self.gatherer {
                                Some(g) if g.is_relay(source) => "relay",
                                _ => "host",
                            };
                            // An address the remote never named is one its checks came
                            // from: peer-reflexive.
                            let theirs = conn
                                .remote_candidates
                                .iter()
                                .find(|c| c.addr == destination)
                                .map_or("prflx", |c| c.typ.as_str());
                            eprintln!(
                                "webrtc: {} connected over {ours} {source} -> {theirs} {destination}",
                                conn.remote
                            );
                        }
                        self.events.push_back(RtcEvent::Open {
                            id,
                            initiator: conn.initiator,
                            data_batch: conn.remote_data_batch.min(self.config.data_batch_bytes),
                        });
                    }
                }
                Output::Data(data) => {
                    self.received += 1;
                    self.events.push_back(RtcEvent::Data { id, data });
                }
                Output::Closed => conn.dead = true,
            }
        }
        if !conn.dead {
            return;
        }
        let was_open = conn.open;
        let remote = conn.remote.clone();
        self.conns.remove(&id);
        if self.by_remote.get(&remote) == Some(&id) {
            self.by_remote.remove(&remote);
        }
        self.routes.retain(|_, r| *r != id);
        self.events.push_back(RtcEvent::Closed { id, was_open });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SWARM: &str = "c89800bfc82ed01ed6e3bfd5408c51274491f7d4";

    /// An in-process signaling server and two transports on loopback, joined in order, on
    /// the WebRTC stacks `stacks`.
    async fn two_transports(
        stacks: [Stack; 2],
    ) -> (ppspp_signal::Running, RtcTransport, RtcTransport) {
        let server = ppspp_signal::spawn(
            "127.0.0.1:0".parse().unwrap(),
            ppspp_signal::Config::default(),
        )
        .await
        .unwrap();
        let url = server.url();
        let url = url.as_str();
        let loopback: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let transport = |stack| async move {
            RtcTransport::bind(
                loopback,
                SignalClient::join(url, SWARM).await.unwrap(),
                SWARM,
                RtcConfig {
                    stack,
                    ..RtcConfig::default()
                },
            )
            .unwrap()
        };
        let a = transport(stacks[0]).await;
        let b = transport(stacks[1]).await;
        (server, a, b)
    }

    /// Drives both transports until `done` says so, with a bound.
    async fn pump(
        a: &mut RtcTransport,
        b: &mut RtcTransport,
        seen: &mut Vec<(char, RtcEvent)>,
        mut done: impl FnMut(&[(char, RtcEvent)]) -> bool,
    ) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
        while !done(seen) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "not done within 15 s; events: {seen:?}"
            );
            for (name, t) in [('a', &mut *a), ('b', &mut *b)] {
                t.flush().await;
                while let Some(e) = t.poll_event() {
                    seen.push((name, e));
                }
            }
            let wake = [a.poll_timeout(), b.poll_timeout()]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or_else(|| Instant::now() + Duration::from_millis(100))
                .min(Instant::now() + Duration::from_millis(100));
            tokio::select! {
                i = a.recv() => a.handle(i),
                i = b.recv() => b.handle(i),
                _ = tokio::time::sleep_until(tokio::time::Instant::from_std(wake)) => {
                    a.handle_timeout(Instant::now());
                    b.handle_timeout(Instant::now());
                }
            }
        }
    }

    #[tokio::test]
    async fn offers_beyond_the_connection_limit_go_unanswered() {
        let (server, mut a, mut b) = two_transports([Stack::Str0m, Stack::Str0m]).await;
        a.config.max_conns = 0;
        let a_id = a.peer_id().unwrap().to_string();
        b.offer(&a_id).unwrap();
        let mut seen = Vec::new();
        let until = Instant::now() + Duration::from_secs(2);
        pump(&mut a, &mut b, &mut seen, |_| Instant::now() >= until).await;
        assert!(a.conns.is_empty(), "a answered: {seen:?}");
        assert!(
            !seen.iter().any(|(_, e)| matches!(e, RtcEvent::Open { .. })),
            "{seen:?}"
        );
        server.shutdown().await.unwrap();
    }

    #[tokio::test]
    async fn two_str0m_endpoints_exchange_messages_over_loopback() {
        exchange_messages([Stack::Str0m, Stack::Str0m]).await;
    }

    #[cfg(feature = "webrtc-rs")]
    #[tokio::test]
    async fn two_webrtc_rs_endpoints_exchange_messages_over_loopback() {
        exchange_messages([Stack::WebrtcRs, Stack::WebrtcRs]).await;
    }

    #[cfg(feature = "webrtc-rs")]
    #[tokio::test]
    async fn str0m_and_webrtc_rs_exchange_messages_both_ways_round() {
        exchange_messages([Stack::Str0m, Stack::WebrtcRs]).await;
        exchange_messages([Stack::WebrtcRs, Stack::Str0m]).await;
    }

    /// `b` offers to `a`; messages both ways, a burst, then a close.
    async fn exchange_messages(stacks: [Stack; 2]) {
        let (server, mut a, mut b) = two_transports(stacks).await;
        let a_id = a.peer_id().unwrap().to_string();
        assert_eq!(b.welcome_peers(), vec![a_id.clone()]);
        let b_conn = b.offer(&a_id).unwrap();

        let mut seen = Vec::new();
        let started = Instant::now();
        pump(&mut a, &mut b, &mut seen, |s| {
            s.iter()
                .filter(|(_, e)| matches!(e, RtcEvent::Open { .. }))
                .count()
                == 2
        })
        .await;
        eprintln!("channels open after {:?}", started.elapsed());
        // Each said it reads batches of several chunks, and each learnt the other did.
        assert!(seen.contains(&(
            'b',
            RtcEvent::Open {
                id: b_conn,
                initiator: true,
                data_batch: config::DEFAULT_DATA_BATCH_BYTES,
            }
        )));
        let a_conn = seen
            .iter()
            .find_map(|(n, e)| match e {
                RtcEvent::Open {
                    id,
                    initiator,
                    data_batch,
                } if *n == 'a' => {
                    assert!(!initiator);
                    assert_eq!(*data_batch, config::DEFAULT_DATA_BATCH_BYTES);
                    Some(*id)
                }
                _ => None,
            })
            .unwrap();

        // Both ways, several messages each; binary content and sizes up to a batch of
        // chunks.
        let mut msgs: Vec<Vec<u8>> = (0..20u8).map(|i| vec![i; 100 + 50 * i as usize]).collect();
        msgs.push(vec![0xBA; config::DEFAULT_DATA_BATCH_BYTES]);
        for m in &msgs {
            assert!(b.send(b_conn, m));
            assert!(a.send(a_conn, &[m.as_slice(), b"!"].concat()));
        }
        seen.clear();
        let count = msgs.len();
        pump(&mut a, &mut b, &mut seen, |s| {
            s.iter()
                .filter(|(_, e)| matches!(e, RtcEvent::Data { .. }))
                .count()
                >= 2 * count
        })
        .await;
        let got = |who: char| -> Vec<Vec<u8>> {
            let mut v: Vec<Vec<u8>> = seen
                .iter()
                .filter_map(|(n, e)| match e {
                    RtcEvent::Data { data, .. } if *n == who => Some(data.clone()),
                    _ => None,
                })
                .collect();
            v.sort();
            v
        };
        let mut want_a = msgs.clone();
        want_a.sort();
        let mut want_b: Vec<Vec<u8>> = msgs.iter().map(|m| [m.as_slice(), b"!"].concat()).collect();
        want_b.sort();
        assert_eq!(got('a'), want_a);
        assert_eq!(got('b'), want_b);

        // A burst far beyond what SCTP takes at once on a young connection: the transport
        // queues instead of dropping, and on loopback every message arrives.
        let burst = 600usize;
        for i in 0..burst {
            let mut m = vec![0xAB; 1100];
            m[..8].copy_from_slice(&(i as u64).to_be_bytes());
            assert!(b.send(b_conn, &m), "message {i} accepted");
        }
        seen.clear();
        pump(&mut a, &mut b, &mut seen, |s| {
            s.iter()
                .filter(|(n, e)| *n == 'a' && matches!(e, RtcEvent::Data { .. }))
                .count()
                >= burst
        })
        .await;
        let mut ids: Vec<u64> = seen
            .iter()
            .filter_map(|(_, e)| match e {
                RtcEvent::Data { data, .. } => {
                    Some(u64::from_be_bytes(data[..8].try_into().unwrap()))
                }
                _ => None,
            })
            .collect();
        ids.sort();
        assert_eq!(ids, (0..burst as u64).collect::<Vec<_>>());
        assert_eq!(b.dropped, 0);

        // Open connections do not carry the open deadline: with a deadline long past, the
        // next wake-up is still in the future (no busy loop).
        a.open_timeout = Duration::from_millis(1);
        tokio::time::sleep(Duration::from_millis(20)).await;
        let now = Instant::now();
        a.handle_timeout(now);
        assert!(a.poll_timeout().unwrap() > now);

        // Closing one side is noticed on the other.
        seen.clear();
        b.shutdown().await;
        pump(&mut a, &mut b, &mut seen, |s| {
            s.iter()
                .any(|(n, e)| *n == 'a' && matches!(e, RtcEvent::Closed { was_open: true, .. }))
        })
        .await;
        server.shutdown().await.unwrap();
    }

    /// Runs both transports until `b` closes connection `id` before it opened; what was seen.
    async fn pump_until_closed(
        a: &mut RtcTransport,
        b: &mut RtcTransport,
        id: u64,
    ) -> Vec<(char, RtcEvent)> {
        let mut seen = Vec::new();
        pump(a, b, &mut seen, |s| {
            s.iter()
                .any(|(n, e)| *n == 'b' && matches!(e, RtcEvent::Closed { .. }))
        })
        .await;
        let closed = RtcEvent::Closed {
            id,
            was_open: false,
        };
        assert!(seen.contains(&('b', closed)), "{seen:?}");
        seen
    }

    #[tokio::test]
    async fn a_connection_that_never_opens_is_given_up() {
        never_opens(Stack::Str0m).await;
        #[cfg(feature = "webrtc-rs")]
        never_opens(Stack::WebrtcRs).await;
    }

    async fn never_opens(stack: Stack) {
        let (server, mut a, mut b) = two_transports([stack; 2]).await;
        b.open_timeout = Duration::from_millis(300);
        // A peer of the room that never answers.
        let silent = SignalClient::join(&server.url(), SWARM).await.unwrap();
        let started = Instant::now();
        let id = b.offer(&silent.peer_id).unwrap();
        let seen = pump_until_closed(&mut a, &mut b, id).await;
        assert!(started.elapsed() >= Duration::from_millis(300));
        assert!(!seen.iter().any(|(_, e)| matches!(e, RtcEvent::Open { .. })));
        drop(silent);
        server.shutdown().await.unwrap();
    }

    #[tokio::test]
    async fn an_offer_to_a_peer_the_server_does_not_know_is_given_up_at_once() {
        let (server, mut a, mut b) = two_transports([Stack::Str0m; 2]).await;
        // The server answers unknown-peer: no need to wait out the open timeout.
        let started = Instant::now();
        let id = b.offer("0123456789abcdef0123456789abcdef").unwrap();
        pump_until_closed(&mut a, &mut b, id).await;
        assert!(started.elapsed() < b.open_timeout / 2);
        server.shutdown().await.unwrap();
    }
}
