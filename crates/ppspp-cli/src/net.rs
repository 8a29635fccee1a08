//! Drives a sans-IO peer (the engine, or discovery before it) over its transports: plain
//! UDP (one socket for every UDP peer) and WebRTC data channels (one more socket for every
//! peer connection, see `rtc/`). One loop, [`drive`], alternates between datagrams,
//! WebRTC events, the timers and the stats tick; a [`Role`] says what differs between the
//! engine and discovery. The peer decides everything; the loop only moves bytes and time.

use crate::http_origin::{Answer, HttpOrigin};
use crate::metrics::SwarmMetrics;
use crate::rtc::{RtcEvent, RtcTransport};
use crate::send_batch::SendBatch;
use crate::stats::StatsPrinter;
use crate::udp::{Clock, RECV_BUFFER};
use ppspp::engine::{
    ChannelStats, ContentInfo, Discovery, DiscoveryError, DiscoveryEvent, Engine, Event, PeerAddr,
    SansIo,
};
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

/// What differs between the peers [`drive`] runs: what a WebRTC connection opening or
/// closing means, what to do with events, and whether to print stats.
trait Role<P: SansIo<Addr = Peer>> {
    /// A data channel opened (`initiator`: we offered it) or closed.
    fn on_rtc(&mut self, p: &mut P, id: u64, opened: Option<bool>, now: Time) -> Flow {
        match opened {
            Some(true) => {
                p.connect(Peer::Rtc(id), now);
            }
            Some(false) => {}
            None => p.peer_lost(&Peer::Rtc(id)),
        }
        Flow::Continue
    }
    fn on_event(&mut self, p: &mut P, event: P::Event) -> Flow;
    /// Starts what the peer wants of its HTTP origin, after each turn.
    fn pump(&mut self, _p: &mut P, _now: Time) {}
    /// The next input from outside the transports: the HTTP origin's answers, a live
    /// stream's chunks (never, for a role without them).
    fn outside(&mut self) -> impl std::future::Future<Output = Outside> {
        std::future::pending()
    }
    /// Hands an outside input to the peer.
    fn take(&mut self, _p: &mut P, _input: Outside, _now: Time) -> Flow {
        Flow::Continue
    }
    /// Once a second, if [`Self::ticks`].
    fn on_tick(&mut self, _p: &P, _now: Time) {}
    fn ticks(&self) -> bool {
        false
    }
}

/// Input to the peer from outside its transports.
pub enum Outside {
    /// An answer of the HTTP origin.
    Origin(Answer),
    /// The next piece of a live stream, or its end (`None`).
    Live(Option<Vec<u8>>),
}

/// A live stream's chunks, as the source reads them.
pub type LiveFeed = tokio::sync::mpsc::Receiver<Option<Vec<u8>>>;

/// The one driver loop of the CLI: moves datagrams between `p` and its transports (plain
/// UDP, WebRTC data channels), feeds it the time, and hands its events to `role`, until the
/// role says stop or `stop` resolves. The peer decides everything; this only moves bytes
/// and time.
async fn drive<P: SansIo<Addr = Peer>>(
    p: &mut P,
    role: &mut impl Role<P>,
    udp: Option<&UdpSocket>,
    mut rtc: Option<&mut RtcTransport>,
    clock: &Clock,
    stop: impl std::future::Future<Output = ()>,
) {
    tokio::pin!(stop);
    let mut buf = vec![0u8; RECV_BUFFER];
    let mut out = SendBatch::default();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        // Until nothing moves: what the peer sends can make the connections produce events
        // and the other way round.
        loop {
            flush(p, &mut out, udp, rtc.as_deref_mut(), clock).await;
            role.pump(p, clock.now());
            let mut progressed = false;
            while let Some(e) = rtc.as_deref_mut().and_then(RtcTransport::poll_event) {
                progressed = true;
                let flow = match e {
                    RtcEvent::Open {
                        id,
                        initiator,
                        data_batch,
                    } => {
                        if data_batch > 0 {
                            p.set_data_batching(&Peer::Rtc(id), Some(data_batch));
                        }
                        role.on_rtc(p, id, Some(initiator), clock.now())
                    }
                    RtcEvent::Data { id, data } => {
                        p.handle_datagram(clock.now(), Peer::Rtc(id), &data);
                        Flow::Continue
                    }
                    RtcEvent::Closed { id, .. } => role.on_rtc(p, id, None, clock.now()),
                };
                if let Flow::Stop = flow {
                    return;
                }
            }
            if !progressed {
                break;
            }
        }
        while let Some(event) = p.poll_event() {
            if let Flow::Stop = role.on_event(p, event) {
                return;
            }
        }
        let deadline = deadline_of(p.poll_timeout(), clock, rtc.as_deref());
        let wake = tokio::select! {
            input = next_input(udp, rtc.as_deref_mut(), &mut buf, deadline) => match input {
                Input::Udp(received) => Wake::Udp(received),
                Input::Rtc => Wake::Rtc,
                Input::Timer => Wake::Timer,
            },
            _ = tick.tick(), if role.ticks() => Wake::Tick,
            input = role.outside() => Wake::Outside(input),
            _ = &mut stop => Wake::Stop,
        };
        match wake {
            Wake::Udp(received) => {
                if let (Ok((n, from)), Some(socket)) = (received, udp) {
                    p.handle_datagram(clock.now(), Peer::Udp(from), &buf[..n]);
                    // Take whatever else already arrived before answering: fewer wake-ups.
                    loop {
                        match socket.try_recv_from(&mut buf) {
                            Ok((n, from)) => {
                                p.handle_datagram(clock.now(), Peer::Udp(from), &buf[..n])
                            }
                            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                            // ICMP errors from peers that went away surface here; the
                            // peer's timers deal with those peers.
                            Err(_) => break,
                        }
                    }
                }
            }
            Wake::Rtc => {}
            Wake::Timer => {
                p.handle_timeout(clock.now());
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
                role.on_tick(p, clock.now());
            }
            Wake::Outside(input) => {
                if let Flow::Stop = role.take(p, input, clock.now()) {
                    return;
                }
            }
            Wake::Stop => return,
        }
    }
}

/// The engine's role: events go to the caller's handler; stats print once a second; the
/// HTTP origin, if any, makes the requests the engine wants.
struct Serving<'a, S: ChunkStore, F> {
    stats: Option<&'a mut StatsPrinter>,
    metrics: Option<&'a mut SwarmMetrics>,
    origin: Option<&'a mut HttpOrigin>,
    live: Option<&'a mut LiveFeed>,
    on_event: F,
    _store: std::marker::PhantomData<S>,
}

impl<S, F> Role<Engine<Peer, S>> for Serving<'_, S, F>
where
    S: ChunkStore,
    F: FnMut(&mut Engine<Peer, S>, Event<Peer>) -> Flow,
{
    fn on_event(&mut self, p: &mut Engine<Peer, S>, event: Event<Peer>) -> Flow {
        (self.on_event)(p, event)
    }

    fn pump(&mut self, p: &mut Engine<Peer, S>, now: Time) {
        if let Some(origin) = self.origin.as_deref() {
            while let Some(request) = p.poll_origin_request(now) {
                origin.start(request);
            }
        }
    }

    async fn outside(&mut self) -> Outside {
        let origin = async {
            match self.origin.as_deref_mut() {
                Some(o) => o.next().await,
                None => std::future::pending().await,
            }
        };
        let live = async {
            match self.live.as_deref_mut() {
                // A closed feed (after its end) has nothing more.
                Some(feed) => match feed.recv().await {
                    Some(piece) => piece,
                    None => std::future::pending().await,
                },
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            answer = origin => Outside::Origin(answer),
            piece = live => Outside::Live(piece),
        }
    }

    fn take(&mut self, p: &mut Engine<Peer, S>, input: Outside, now: Time) -> Flow {
        match input {
            Outside::Origin(answer) => match answer.result {
                Ok(bytes) => p.handle_origin_response(now, answer.id, &bytes),
                Err(error) => p.handle_origin_failure(now, answer.id, error),
            },
            Outside::Live(Some(chunk)) => {
                if let Err(e) = p.push_live_chunk(&chunk, now) {
                    eprintln!("ppspp: live chunk refused: {e}");
                    return Flow::Stop;
                }
            }
            Outside::Live(None) => {
                if let Err(e) = p.finish_live(now) {
                    eprintln!("ppspp: ending the live stream: {e}");
                    return Flow::Stop;
                }
            }
        }
        Flow::Continue
    }

    fn on_tick(&mut self, p: &Engine<Peer, S>, now: Time) {
        if let Some(s) = self.stats.as_deref_mut() {
            s.print(p, now);
        }
        if let Some(m) = self.metrics.as_deref_mut() {
            m.update(&p.stats());
        }
    }

    fn ticks(&self) -> bool {
        self.stats.is_some() || self.metrics.is_some()
    }
}

/// The transports and helpers an engine runs with.
pub struct Links<'a> {
    pub udp: Option<&'a UdpSocket>,
    pub rtc: Option<&'a mut RtcTransport>,
    pub origin: Option<&'a mut HttpOrigin>,
    /// A live source's chunks.
    pub live: Option<&'a mut LiveFeed>,
    /// The swarm's figures for `--metrics`, updated on the stats tick.
    pub metrics: Option<&'a mut SwarmMetrics>,
}

/// What a serving command (`seed`, `live`) says of its peers: who came, who left and why.
pub fn report_peers<S: ChunkStore>(_: &mut Engine<Peer, S>, event: Event<Peer>) -> Flow {
    match event {
        Event::PeerConnected { peer } => eprintln!("peer {peer} connected"),
        Event::PeerClosed { peer, reason } => eprintln!("peer {peer} left: {reason}"),
        _ => {}
    }
    Flow::Continue
}

/// Runs `engine` until `on_event` says stop or `stop` resolves, closes every channel, and
/// shuts the WebRTC transport down. Returns the channels as they were when it stopped,
/// before they were closed (for what a stalled fetch reports).
pub async fn run<S: ChunkStore>(
    engine: &mut Engine<Peer, S>,
    links: Links<'_>,
    clock: &Clock,
    mut stats: Option<StatsPrinter>,
    on_event: impl FnMut(&mut Engine<Peer, S>, Event<Peer>) -> Flow,
    stop: impl std::future::Future<Output = ()>,
) -> Vec<ChannelStats<Peer>> {
    let Links {
        udp,
        mut rtc,
        origin,
        live,
        metrics,
    } = links;
    let mut role = Serving {
        stats: stats.as_mut(),
        metrics,
        origin,
        live,
        on_event,
        _store: std::marker::PhantomData,
    };
    drive(engine, &mut role, udp, rtc.as_deref_mut(), clock, stop).await;
    if let Some(m) = role.metrics.take() {
        m.update(&engine.stats());
    }
    drop(role);
    // The last line describes the channels as they ended, before they are closed.
    if let Some(s) = stats.as_mut() {
        s.print(engine, clock.now());
    }
    let ended = engine.channel_stats();
    // However it ended, say goodbye: a peer keeps a silent channel's slot for minutes.
    engine.close_all();
    flush(
        engine,
        &mut SendBatch::default(),
        udp,
        rtc.as_deref_mut(),
        clock,
    )
    .await;
    if let Some(r) = rtc {
        r.shutdown().await;
    }
    ended
}

/// Discovery's role: WebRTC connections we offered are asked as they open; it ends when a
/// peer proves the content or every peer (and every connection still being offered) has
/// failed.
struct Discovering {
    offered: Vec<u64>,
    opened: Vec<u64>,
    outcome: Option<Result<ContentInfo, DiscoveryError<Peer>>>,
}

impl Discovering {
    fn give_up_if_all_failed(&mut self, p: &Discovery<Peer>) -> Flow {
        match p.failed() {
            Some(e) if self.offered.is_empty() => {
                self.outcome = Some(Err(e));
                Flow::Stop
            }
            _ => Flow::Continue,
        }
    }
}

impl Role<Discovery<Peer>> for Discovering {
    fn on_rtc(
        &mut self,
        p: &mut Discovery<Peer>,
        id: u64,
        opened: Option<bool>,
        now: Time,
    ) -> Flow {
        self.offered.retain(|o| *o != id);
        match opened {
            Some(true) => {
                self.opened.push(id);
                p.connect(Peer::Rtc(id), now);
            }
            Some(false) => {}
            None => {
                self.opened.retain(|o| *o != id);
                p.peer_lost(&Peer::Rtc(id));
            }
        }
        self.give_up_if_all_failed(p)
    }

    fn on_event(&mut self, p: &mut Discovery<Peer>, event: DiscoveryEvent<Peer>) -> Flow {
        match event {
            DiscoveryEvent::Found(info) => {
                self.outcome = Some(Ok(info));
                Flow::Stop
            }
            DiscoveryEvent::AllFailed(_) => self.give_up_if_all_failed(p),
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
    offered: Vec<u64>,
    clock: &Clock,
    stop: impl std::future::Future<Output = ()>,
) -> (Option<Result<ContentInfo, DiscoveryError<Peer>>>, Vec<u64>) {
    let mut role = Discovering {
        offered,
        opened: Vec::new(),
        outcome: None,
    };
    // Peers that failed before the loop started (none answer UDP, nothing offered).
    if let Flow::Continue = role.give_up_if_all_failed(discovery) {
        drive(discovery, &mut role, udp, rtc.as_deref_mut(), clock, stop).await;
    }
    // The closes of the probe channels go out before the engine takes over.
    flush(discovery, &mut SendBatch::default(), udp, rtc, clock).await;
    (role.outcome, role.opened)
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
    Outside(Outside),
    Stop,
}

/// Sends everything `p` has to send now: UDP datagrams in batches, data-channel messages
/// as they come.
async fn flush<P: SansIo<Addr = Peer>>(
    p: &mut P,
    batch: &mut SendBatch,
    udp: Option<&UdpSocket>,
    mut rtc: Option<&mut RtcTransport>,
    clock: &Clock,
) {
    loop {
        let buf = batch.next_buf();
        let Some(to) = p.poll_transmit(clock.now(), buf) else {
            break;
        };
        match (to, udp) {
            (Peer::Udp(addr), Some(socket)) => {
                if batch.push(addr) {
                    batch.send(socket).await;
                }
            }
            (to, _) => send(to, buf, udp, rtc.as_deref_mut()).await,
        }
    }
    if let Some(socket) = udp {
        batch.send(socket).await;
    }
    if let Some(r) = rtc {
        r.flush().await;
    }
}
