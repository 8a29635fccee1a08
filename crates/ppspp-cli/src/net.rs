//! Drives one engine over its transports: plain UDP (one socket for every UDP peer) and
//! WebRTC data channels (one more socket for every peer connection, see `rtc.rs`). One task
//! alternates between datagrams, signaling messages, the timers and the stats tick. The
//! engine decides everything; this loop only moves bytes and time.

use crate::rtc::{RtcEvent, RtcTransport};
use crate::stats::StatsPrinter;
use crate::udp::{Clock, RECV_BUFFER};
use ppspp::engine::{ContentInfo, Discovery, DiscoveryError, Engine, Event, PeerAddr};
use ppspp::store::ChunkStore;
use ppspp::time::Time;
use std::fmt;
use std::io::ErrorKind;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::UdpSocket;
use tokio::time::Instant;

/// A peer as the engine sees it: which transport, and where on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Peer {
    /// Plain RFC 7574 over UDP.
    Udp(SocketAddr),
    /// A WebRTC peer connection (its id in `RtcTransport`).
    Rtc(u64),
}

impl PeerAddr for Peer {
    fn socket_addr(&self) -> Option<SocketAddr> {
        match self {
            Peer::Udp(a) => Some(*a),
            Peer::Rtc(_) => None,
        }
    }

    fn from_socket_addr(addr: SocketAddr) -> Option<Self> {
        Some(Peer::Udp(addr))
    }
}

impl fmt::Display for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Peer::Udp(a) => write!(f, "{a}"),
            Peer::Rtc(id) => write!(f, "webrtc#{id}"),
        }
    }
}

/// What the event handler tells the loop.
pub enum Flow {
    Continue,
    Stop,
}

/// Runs until `on_event` says stop or `stop` resolves.
pub async fn run<S: ChunkStore>(
    engine: &mut Engine<Peer, S>,
    udp: Option<&UdpSocket>,
    mut rtc: Option<&mut RtcTransport>,
    clock: &Clock,
    mut stats: Option<StatsPrinter>,
    mut on_event: impl FnMut(&mut Engine<Peer, S>, Event<Peer>) -> Flow,
    stop: impl std::future::Future<Output = ()>,
) {
    tokio::pin!(stop);
    let mut buf = vec![0u8; RECV_BUFFER];
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        // Until nothing moves: what the engine sends can make the connections produce events
        // and the other way round.
        loop {
            flush(engine, udp, rtc.as_deref_mut(), clock).await;
            let mut progressed = false;
            if let Some(r) = rtc.as_deref_mut() {
                while let Some(e) = r.poll_event() {
                    progressed = true;
                    match e {
                        RtcEvent::Open { id, initiator } => {
                            if initiator {
                                engine.connect(Peer::Rtc(id), clock.now());
                            }
                        }
                        RtcEvent::Data { id, data } => {
                            engine.handle_datagram(clock.now(), Peer::Rtc(id), &data)
                        }
                        RtcEvent::Closed { id, .. } => engine.peer_lost(&Peer::Rtc(id)),
                    }
                }
            }
            if !progressed {
                break;
            }
        }
        while let Some(event) = engine.poll_event() {
            if let Flow::Stop = on_event(engine, event) {
                finish(engine, udp, rtc, clock, stats.as_mut(), false).await;
                return;
            }
        }
        let deadline = deadline_of(engine.poll_timeout(), clock, rtc.as_deref());
        let wake = tokio::select! {
            input = next_input(udp, rtc.as_deref_mut(), &mut buf, deadline) => match input {
                Input::Udp(received) => Wake::Udp(received),
                Input::Rtc => Wake::Rtc,
                Input::Timer => Wake::Timer,
            },
            _ = tick.tick(), if stats.is_some() => Wake::Tick,
            _ = &mut stop => Wake::Stop,
        };
        match wake {
            Wake::Udp(received) => {
                if let (Ok((n, from)), Some(socket)) = (received, udp) {
                    engine.handle_datagram(clock.now(), Peer::Udp(from), &buf[..n]);
                    // Take whatever else already arrived before answering: fewer wake-ups.
                    loop {
                        match socket.try_recv_from(&mut buf) {
                            Ok((n, from)) => {
                                engine.handle_datagram(clock.now(), Peer::Udp(from), &buf[..n])
                            }
                            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                            // ICMP errors from peers that went away surface here; the
                            // engine's timers deal with those peers.
                            Err(_) => break,
                        }
                    }
                }
            }
            Wake::Rtc => {}
            Wake::Timer => {
                engine.handle_timeout(clock.now());
                if let Some(r) = rtc.as_deref_mut() {
                    r.handle_timeout(std::time::Instant::now());
                }
            }
            Wake::Tick => {
                if std::env::var_os("PPSPP_RTC_TRACE").is_some()
                    && let Some(r) = rtc.as_deref_mut()
                {
                    eprintln!("rtc: {}", r.debug_line());
                }
                if let Some(s) = stats.as_mut() {
                    s.print(engine, clock.now());
                }
            }
            Wake::Stop => {
                finish(engine, udp, rtc, clock, stats.as_mut(), true).await;
                return;
            }
        }
    }
}

/// Asks `udp_peers` and the WebRTC peers offered (`offered`) for the content's chunk size
/// and length, until one proves them, every peer has failed, or `stop` resolves (`None`).
/// Returns the WebRTC connections that opened, for the engine to use next.
pub async fn discover(
    discovery: &mut Discovery<Peer>,
    udp: Option<&UdpSocket>,
    mut rtc: Option<&mut RtcTransport>,
    mut offered: Vec<u64>,
    clock: &Clock,
    stop: impl std::future::Future<Output = ()>,
) -> (Option<Result<ContentInfo, DiscoveryError<Peer>>>, Vec<u64>) {
    tokio::pin!(stop);
    let mut buf = vec![0u8; RECV_BUFFER];
    let mut opened = Vec::new();
    loop {
        loop {
            while let Some(t) = discovery.poll_transmit(clock.now()) {
                send(t.to, &t.payload, udp, rtc.as_deref_mut()).await;
            }
            if let Some(r) = rtc.as_deref_mut() {
                r.flush().await;
            }
            let mut progressed = false;
            if let Some(r) = rtc.as_deref_mut() {
                while let Some(e) = r.poll_event() {
                    progressed = true;
                    match e {
                        RtcEvent::Open { id, initiator } => {
                            offered.retain(|o| *o != id);
                            if initiator {
                                opened.push(id);
                                discovery.connect(Peer::Rtc(id), clock.now());
                            }
                        }
                        RtcEvent::Data { id, data } => {
                            discovery.handle_datagram(clock.now(), Peer::Rtc(id), &data)
                        }
                        RtcEvent::Closed { id, .. } => {
                            offered.retain(|o| *o != id);
                            opened.retain(|o| *o != id);
                            discovery.peer_lost(&Peer::Rtc(id));
                        }
                    }
                }
            }
            if !progressed {
                break;
            }
        }
        if let Some(found) = discovery.found().copied() {
            // The closes of the probe channels go out before the engine takes over.
            while let Some(t) = discovery.poll_transmit(clock.now()) {
                send(t.to, &t.payload, udp, rtc.as_deref_mut()).await;
            }
            if let Some(r) = rtc.as_deref_mut() {
                r.flush().await;
            }
            return (Some(Ok(found)), opened);
        }
        if offered.is_empty()
            && let Some(e) = discovery.failed()
        {
            return (Some(Err(e)), opened);
        }
        let deadline = deadline_of(discovery.poll_timeout(), clock, rtc.as_deref());
        tokio::select! {
            input = next_input(udp, rtc.as_deref_mut(), &mut buf, deadline) => match input {
                Input::Udp(Ok((n, from))) => {
                    discovery.handle_datagram(clock.now(), Peer::Udp(from), &buf[..n]);
                }
                Input::Udp(Err(_)) | Input::Rtc => {}
                Input::Timer => {
                    discovery.handle_timeout(clock.now());
                    if let Some(r) = rtc.as_deref_mut() {
                        r.handle_timeout(std::time::Instant::now());
                    }
                }
            },
            _ = &mut stop => return (None, opened),
        }
    }
}

/// When to wake: the driver's own timer or the WebRTC transport's, whichever comes first.
fn deadline_of(own: Option<Time>, clock: &Clock, rtc: Option<&RtcTransport>) -> Instant {
    let mut deadline = own
        .map(|t| clock.instant(t))
        .unwrap_or_else(|| Instant::now() + Duration::from_secs(3600));
    if let Some(t) = rtc.and_then(RtcTransport::poll_timeout) {
        deadline = deadline.min(Instant::from_std(t));
    }
    deadline
}

/// What ended a wait in [`next_input`].
enum Input {
    /// A UDP datagram (in the buffer) or a receive error.
    Udp(std::io::Result<(usize, SocketAddr)>),
    /// The WebRTC transport took something in (its events say what).
    Rtc,
    Timer,
}

/// Waits for a UDP datagram, for input to the WebRTC transport, or for `deadline`.
async fn next_input(
    udp: Option<&UdpSocket>,
    rtc: Option<&mut RtcTransport>,
    buf: &mut [u8],
    deadline: Instant,
) -> Input {
    let rtc_recv = async {
        match rtc {
            Some(r) => {
                let i = r.recv().await;
                r.handle(i);
            }
            None => std::future::pending().await,
        }
    };
    let udp_recv = async {
        match udp {
            Some(s) => s.recv_from(buf).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        received = udp_recv => Input::Udp(received),
        _ = rtc_recv => Input::Rtc,
        _ = tokio::time::sleep_until(deadline) => Input::Timer,
    }
}

async fn send(to: Peer, payload: &[u8], udp: Option<&UdpSocket>, rtc: Option<&mut RtcTransport>) {
    // A failed send is a lost datagram; the protocol recovers from those.
    match (to, udp, rtc) {
        (Peer::Udp(to), Some(s), _) => {
            let _ = s.send_to(payload, to).await;
        }
        (Peer::Rtc(id), _, Some(r)) => {
            r.send(id, payload);
        }
        _ => {}
    }
}

enum Wake {
    Udp(std::io::Result<(usize, SocketAddr)>),
    Rtc,
    Timer,
    Tick,
    Stop,
}

async fn finish<S: ChunkStore>(
    engine: &mut Engine<Peer, S>,
    udp: Option<&UdpSocket>,
    mut rtc: Option<&mut RtcTransport>,
    clock: &Clock,
    stats: Option<&mut StatsPrinter>,
    close_all: bool,
) {
    if close_all {
        engine.close_all();
    }
    flush(engine, udp, rtc.as_deref_mut(), clock).await;
    if let Some(r) = rtc {
        r.shutdown().await;
    }
    if let Some(s) = stats {
        s.print(engine, clock.now());
    }
}

async fn flush<S: ChunkStore>(
    engine: &mut Engine<Peer, S>,
    udp: Option<&UdpSocket>,
    mut rtc: Option<&mut RtcTransport>,
    clock: &Clock,
) {
    while let Some(t) = engine.poll_transmit(clock.now()) {
        send(t.to, &t.payload, udp, rtc.as_deref_mut()).await;
    }
    if let Some(r) = rtc {
        r.flush().await;
    }
}
