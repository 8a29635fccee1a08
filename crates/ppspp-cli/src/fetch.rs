//! `ppspp fetch URI|ROOT-HEX -o FILE`: download and verify, then rename into place. With a
//! bare root the chunk size and length are first learnt from the peers (`Discovery`). A
//! URI's HTTP origin (`http=`, `tree=`) is used as the browser uses it, with the same
//! verification; with no peer named, it is the only source.

use crate::file_store::FileStore;
use crate::http_origin::{HttpOrigin, HttpOriginError, REQUEST_TIMEOUT};
use crate::ice_args::IceArgsError;
use crate::live::record::RecordError;
use crate::net::{self, Flow, Links, Peer};
use crate::rtc::{RtcError, RtcTransport};
use crate::signal::{JoinAnyError, join_first};
use crate::stats::StatsPrinter;
use crate::udp::{self, Clock};
use clap::Args;
use ppspp::engine::{
    ChannelStats, ContentInfo, Discovery, DiscoveryConfigError, DiscoveryError, Engine,
    EngineConfig, EngineError, Event, HttpOriginConfig, OriginError,
};
use ppspp::merkle::{Hash, VerifyError, WrongLength};
use ppspp::store::StoreError;
use ppspp::uri::{HttpOriginUrls, SwarmUri, UriError};
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Instant;

#[derive(Args, Debug)]
pub struct FetchArgs {
    /// The swarm URI printed by `ppspp seed` (ppspp://<root>?len=…), or only the root hash
    /// in hex: then the chunk size and length are learnt from the peers named with --udp
    /// or found through --signal.
    #[arg(value_name = "URI|ROOT-HEX")]
    uri: String,
    /// Where to write the content (written as a new FILE.<random>.part beside it until
    /// verified complete).
    #[arg(short = 'o', long = "output")]
    output: PathBuf,
    /// A UDP peer to fetch from, in addition to those in the URI (repeatable).
    #[arg(long = "udp")]
    udp: Vec<String>,
    /// A signaling server (ws://HOST:PORT) to find WebRTC peers through, instead of the
    /// URI's. Several (repeat, or comma-separated): instances of one site's signaling; the
    /// first that answers is used, the next ones when it drops.
    #[arg(long = "signal", value_name = "URL", value_delimiter = ',')]
    signal: Vec<String>,
    /// With a bare root hash: the swarm's chunk size in bytes (default: try the powers of
    /// two from 1 KiB to 32 KiB).
    #[arg(long = "chunk-size", value_parser = crate::root::parse_chunk_size)]
    chunk_size: Option<usize>,
    /// Local UDP address (default: loopback if every peer is on loopback, else any). Its IP
    /// is also the WebRTC socket's (default 127.0.0.1, reachable from this machine only).
    #[arg(long)]
    bind: Option<SocketAddr>,
    /// Download limit in bytes per second.
    #[arg(long = "download-limit")]
    download_limit: Option<u64>,
    /// Keep serving the content to other peers after it is complete, until interrupted.
    #[arg(long = "keep-seeding")]
    keep_seeding: bool,
    /// Print one JSON line of figures per second on stdout.
    #[arg(long = "stats-json")]
    stats_json: bool,
    /// Record a live stream (a ppspp://live/… URI) from its edge until it ends (no new
    /// chunk for --give-up-after seconds) or Ctrl-C. A live URI implies it.
    #[arg(long)]
    live: bool,
    /// Give up when no chunk has been verified for this many seconds (before the first:
    /// since the start), however many peers are connected. Live: the stream counts as
    /// ended then.
    #[arg(long = "give-up-after", default_value_t = 30)]
    give_up_after: u64,
    #[command(flatten)]
    ice: crate::ice_args::IceArgs,
}

/// At most this many WebRTC peers of the room's `welcome` sample get an offer.
pub const MAX_RTC_OFFERS: usize = 20;

/// How the fetch ended.
enum Outcome {
    Complete,
    NoPeers(Vec<String>),
    /// Peers were connected, but none delivered a verifiable chunk in time.
    Stalled,
    Failed(FetchError),
    Interrupted,
}

/// Why the peers that the command line and a URI name cannot be reached: what `fetch`
/// and a live recording share.
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    #[error("cannot resolve peer {peer}: {source}")]
    Resolve {
        peer: String,
        #[source]
        source: std::io::Error,
    },
    #[error("peer {0} has no address")]
    NoAddress(String),
    #[error(transparent)]
    Join(#[from] JoinAnyError),
    #[error(transparent)]
    Ice(#[from] IceArgsError),
    #[error(transparent)]
    Rtc(#[from] RtcError),
}

/// How far a download got, for the messages of one that did not complete.
#[derive(Debug, Clone, Copy)]
pub struct Verified {
    pub have: u64,
    pub count: u64,
    pub rejected: u64,
}

/// Why `ppspp fetch` failed.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// Recording a live stream.
    #[error(transparent)]
    Live(#[from] RecordError),
    #[error("not a swarm URI (ppspp://…) nor a root hash in hex (40 to 128 hex digits): {0}")]
    NotATarget(String),
    #[error("not a usable swarm URI ({source}): {text}")]
    BadUri {
        text: String,
        #[source]
        source: UriError,
    },
    #[error("--chunk-size is only for a bare root hash; the URI already says (cs=)")]
    ChunkSizeWithUri,
    #[error(transparent)]
    Peers(#[from] PeerError),
    #[error(
        "no peer to fetch from: the URI names no udp= peer and no signal= server; add --udp HOST:PORT or --signal ws://HOST:PORT"
    )]
    NoPeerInUri,
    #[error(
        "no peer to fetch from: with a bare root hash, name a peer with --udp HOST:PORT or a signaling server with --signal ws://HOST:PORT"
    )]
    NoPeerForRoot,
    /// The signaling server's room had nobody else in it (the URL joined).
    #[error("no peer to fetch from: nobody else is in the swarm's room at {0}")]
    NobodyInRoom(String),
    /// The chunk sizes to discover with are not usable.
    #[error(transparent)]
    Discovery(#[from] DiscoveryConfigError),
    #[error("cannot start the runtime: {0}")]
    Runtime(#[source] std::io::Error),
    #[error(transparent)]
    Origin(#[from] HttpOriginError),
    #[error("cannot bind UDP {addr}: {source}")]
    BindUdp {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    /// The peers described a bare root's content in ways that cannot be used.
    #[error(transparent)]
    Described(#[from] DiscoveryError<Peer>),
    #[error("no peer described the content within {secs} s ({answered} answered)")]
    NotDescribed { secs: u64, answered: usize },
    /// The output (its temporary file, or the rename into place) could not be written.
    #[error("cannot write {}: {source}", .path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot start: {0}")]
    Start(#[source] EngineError),
    /// With no peer to fetch it from, a chunk the origin got wrong cannot be had.
    #[error(
        "chunk {chunk} from the HTTP origin failed verification ({reason}), and no peer can provide it: the web server's file or tree is not this swarm's content"
    )]
    OriginCorrupt { chunk: u64, reason: VerifyError },
    #[error("the HTTP origin failed: {0}")]
    OriginFailed(#[source] OriginError),
    /// A peer proved the URI's `len=` wrong.
    #[error("bad URI: {0}; ask whoever gave you the URI for its right len=")]
    WrongLength(WrongLength),
    /// `part` is the temporary file.
    #[error("cannot write chunk {chunk} to {part}: {source}")]
    WriteChunk {
        chunk: u64,
        part: String,
        #[source]
        source: StoreError,
    },
    #[error("could not complete the download from the HTTP origin; {} of {} chunks verified, {} rejected{}", .verified.have, .verified.count, .verified.rejected, origin_said(.origin_error))]
    OriginIncomplete {
        verified: Verified,
        origin_error: Option<Box<OriginError>>,
    },
    /// Every peer left or never answered (`why`: each one's reason).
    #[error("could not complete the download: no peer left ({}); {} of {} chunks verified, {} rejected{}", listed(.why), .verified.have, .verified.count, .verified.rejected, origin_said(.origin_error))]
    NoPeerLeft {
        why: Vec<String>,
        verified: Verified,
        origin_error: Option<Box<OriginError>>,
    },
    /// Connected peers delivered nothing verifiable for `secs`; `channels` says what each
    /// was doing, `closed` who left and why.
    #[error("no chunk could be verified for {secs} s from the {peers} connected peer(s){channels}; {} of {} chunks verified, {} rejected{}{}", .verified.have, .verified.count, .verified.rejected, peers_that_left(.closed), origin_said(.origin_error))]
    Stalled {
        secs: u64,
        peers: usize,
        channels: String,
        verified: Verified,
        closed: Vec<String>,
        origin_error: Option<Box<OriginError>>,
    },
    #[error("interrupted before the download completed")]
    Interrupted,
}

/// The end of a failed download's message that gives the HTTP origin's last error.
fn origin_said(origin_error: &Option<Box<OriginError>>) -> String {
    origin_error
        .as_ref()
        .map(|e| format!("; the HTTP origin's last error: {e}"))
        .unwrap_or_default()
}

/// The end of a stalled download's message that names the peers that left.
fn peers_that_left(closed: &[String]) -> String {
    if closed.is_empty() {
        String::new()
    } else {
        format!("; peers that left: {}", listed(closed))
    }
}

/// What each channel was doing when a fetch gave up: whom it was with, what it had
/// delivered, and what it was asked for and not yet sent.
fn describe_channels(ended: &[ChannelStats<net::Peer>]) -> String {
    if ended.is_empty() {
        return String::new();
    }
    let each: Vec<String> = ended
        .iter()
        .map(|c| {
            format!(
                "{}: {} bytes from it, {} requests waiting, {} chunks announced{}{}",
                c.peer,
                c.bytes_downloaded,
                c.requests_outstanding,
                c.peer_chunks,
                if c.established {
                    ""
                } else {
                    ", handshake not done"
                },
                if c.choked_by_peer { ", choking us" } else { "" }
            )
        })
        .collect();
    format!(" ({})", listed(&each))
}

/// Resolves once `progress` (the time of the last progress; `None`: never give up) is
/// `secs` old, or on Ctrl-C/SIGTERM.
pub async fn give_up(secs: u64, progress: &std::cell::Cell<Option<Instant>>) {
    let limit = std::time::Duration::from_secs(secs);
    let stalled = async {
        loop {
            match progress.get() {
                Some(at) if at.elapsed() >= limit => return,
                Some(at) => tokio::time::sleep_until((at + limit).into()).await,
                None => tokio::time::sleep(limit).await,
            }
        }
    };
    tokio::select! {
        _ = stalled => {}
        _ = crate::shutdown_signal() => {}
    }
}

/// What the command line names: a full swarm URI, or only the root.
enum Target {
    Uri(SwarmUri),
    Root(Hash),
}

/// Where the content's description comes from.
enum Plan {
    Known(ContentInfo),
    Discover(Box<Discovery<Peer>>),
}

/// Resolves `host:port` peers.
pub fn resolve_peers<'a>(
    names: impl Iterator<Item = &'a String>,
) -> Result<Vec<SocketAddr>, PeerError> {
    names
        .map(|p| {
            p.to_socket_addrs()
                .map_err(|source| PeerError::Resolve {
                    peer: p.clone(),
                    source,
                })?
                .next()
                .ok_or_else(|| PeerError::NoAddress(p.clone()))
        })
        .collect()
}

/// Joins `room` at the first of the signaling servers `urls` that answers (the others
/// take over when it drops) and readies a WebRTC transport on the IP of `bind` (default
/// loopback).
pub async fn join_rtc(
    urls: &[String],
    room: &str,
    bind: Option<SocketAddr>,
    ice: &crate::ice_args::IceArgs,
) -> Result<RtcTransport, PeerError> {
    let (client, joined) = join_first(urls, 0, room).await?;
    let servers = ice.servers(client.ice_servers())?;
    let ip = match bind {
        Some(b) if !b.ip().is_unspecified() => b.ip(),
        _ => [127, 0, 0, 1].into(),
    };
    let config = crate::rtc::RtcConfig {
        relay_only: ice.relay_only,
        stack: ice.webrtc_stack,
        data_batch_bytes: ice.data_batch_bytes as usize,
        ..crate::rtc::RtcConfig::default()
    };
    let mut t = RtcTransport::bind(SocketAddr::new(ip, 0), client, room, config)?;
    t.fail_over_to(urls.to_vec(), joined);
    t.gather_and_report(&servers).await;
    Ok(t)
}

/// A local UDP address for talking to `peers`: loopback if they all are.
pub fn default_bind(peers: &[SocketAddr]) -> SocketAddr {
    if peers.iter().all(|p| p.ip().is_loopback()) {
        SocketAddr::from(([127, 0, 0, 1], 0))
    } else {
        SocketAddr::from(([0, 0, 0, 0], 0))
    }
}

pub fn run(args: &FetchArgs) -> Result<(), FetchError> {
    if args.live || args.uri.trim().starts_with("ppspp://live/") {
        return Ok(crate::live::record::run(&crate::live::record::LiveFetch {
            uri: &args.uri,
            output: &args.output,
            udp: &args.udp,
            signal: &args.signal,
            bind: args.bind,
            stats_json: args.stats_json,
            give_up_after: args.give_up_after,
            ice: &args.ice,
        })?);
    }
    let (sources, plan) = Sources::from_args(args)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(FetchError::Runtime)?;
    // Join the swarm's room before creating any file, so an unreachable server leaves none.
    let rtc = match sources.signal.is_empty() {
        false => Some(runtime.block_on(join_rtc(
            &sources.signal,
            &sources.root.to_hex(),
            args.bind,
            &args.ice,
        ))?),
        true => None,
    };
    let rtc_peers: Vec<String> = rtc
        .as_ref()
        .map(|r| r.welcome_peers().into_iter().take(MAX_RTC_OFFERS).collect())
        .unwrap_or_default();
    if sources.peers.is_empty() && rtc_peers.is_empty() && sources.origin.is_none() {
        return Err(FetchError::NobodyInRoom(
            rtc.as_ref().map_or("?", |r| r.signal_url()).to_string(),
        ));
    }
    let started = Instant::now();
    let fetched = runtime.block_on(fetch(args, &sources, plan, rtc, &rtc_peers))?;
    finish(args, &sources, fetched, started)
}

/// Where the content comes from, as the command line and the URI say: checked before any
/// network work, so a typo costs nothing.
struct Sources {
    root: Hash,
    /// UDP peers (the URI's and `--udp`).
    peers: Vec<SocketAddr>,
    /// Signaling servers (`--signal`, else the URI's).
    signal: Vec<String>,
    origin: Option<HttpOriginUrls>,
    /// Only the HTTP origin: no peer, no signaling server.
    http_only: bool,
}

impl Sources {
    /// The sources, and the content's description or how to learn it.
    fn from_args(args: &FetchArgs) -> Result<(Sources, Plan), FetchError> {
        let target = parse_target(&args.uri)?;
        let (root, uri_udp, uri_signal, origin) = match &target {
            Target::Uri(uri) => {
                if args.chunk_size.is_some() {
                    return Err(FetchError::ChunkSizeWithUri);
                }
                (
                    uri.root,
                    uri.udp.clone(),
                    uri.signal.clone(),
                    uri.origin.clone(),
                )
            }
            Target::Root(root) => (*root, Vec::new(), None, None),
        };
        let signal: Vec<String> = match args.signal.is_empty() {
            true => uri_signal.into_iter().collect(),
            false => args.signal.clone(),
        };
        let peers = resolve_peers(uri_udp.iter().chain(&args.udp))?;
        if peers.is_empty() && signal.is_empty() && origin.is_none() {
            return Err(match target {
                Target::Uri(_) => FetchError::NoPeerInUri,
                Target::Root(_) => FetchError::NoPeerForRoot,
            });
        }
        let plan = match &target {
            Target::Uri(uri) => Plan::Known(uri.content()),
            Target::Root(root) => {
                let sizes: Vec<u32> = args.chunk_size.map(|c| c as u32).into_iter().collect();
                Plan::Discover(Box::new(Discovery::new(
                    *root,
                    &sizes,
                    crate::random_seed(),
                )?))
            }
        };
        let sources = Sources {
            root,
            http_only: peers.is_empty() && signal.is_empty(),
            peers,
            signal,
            origin,
        };
        Ok((sources, plan))
    }
}

/// How a fetch's run ended, with the engine that ran it.
struct Fetched {
    outcome: Outcome,
    engine: Engine<Peer, FileStore>,
    /// The channels when it ended.
    ended: Vec<ChannelStats<Peer>>,
    /// Peers that left, and why.
    closed: Vec<String>,
    /// What the HTTP origin last failed with.
    origin_error: Option<OriginError>,
}

/// In the runtime: learns the content's description if needed, starts the engine over a
/// new temporary file and runs it until the content is complete, the fetch gives up or
/// is interrupted.
async fn fetch(
    args: &FetchArgs,
    sources: &Sources,
    plan: Plan,
    mut rtc: Option<RtcTransport>,
    rtc_peers: &[String],
) -> Result<Fetched, FetchError> {
    // In the runtime: its client spawns there.
    let mut origin = sources
        .origin
        .as_ref()
        .map(|urls| HttpOrigin::new(urls, REQUEST_TIMEOUT))
        .transpose()?;
    let bind = args.bind.unwrap_or_else(|| default_bind(&sources.peers));
    let socket = match sources.peers.is_empty() {
        true => None,
        false => {
            Some(udp::bind(bind).map_err(|source| FetchError::BindUdp { addr: bind, source })?)
        }
    };
    let clock = Clock::new();
    let mut offered = Vec::new();
    if let Some(r) = rtc.as_mut() {
        for p in rtc_peers {
            offered.push(r.offer(p).map_err(PeerError::from)?);
        }
    }
    let (content, opened) = match plan {
        Plan::Known(content) => (content, Vec::new()),
        Plan::Discover(mut discovery) => {
            describe(
                args,
                sources,
                &mut discovery,
                socket.as_ref(),
                rtc.as_mut(),
                offered,
                &clock,
            )
            .await?
        }
    };
    let mut engine = start_engine(args, sources, content, &clock)?;
    for p in &sources.peers {
        engine.connect(Peer::Udp(*p), clock.now());
    }
    // Connections that opened during discovery announce themselves no more.
    for id in opened {
        engine.connect(Peer::Rtc(id), clock.now());
    }
    let progressed = std::cell::Cell::new(Some(Instant::now()));
    let mut watch = Watch::new(args, sources.http_only, &engine, &progressed);
    let ended = net::run(
        &mut engine,
        Links {
            udp: socket.as_ref(),
            rtc: rtc.as_mut(),
            origin: origin.as_mut(),
            live: None,
            metrics: None,
        },
        &clock,
        args.stats_json.then(StatsPrinter::new),
        |engine, event| watch.on_event(engine, event),
        give_up(args.give_up_after, &progressed),
    )
    .await;
    let outcome = watch.outcome(sources, rtc_peers);
    Ok(Fetched {
        outcome,
        engine,
        ended,
        closed: watch.closed,
        origin_error: watch.origin_error,
    })
}

/// Asks the peers for the chunk size and length of a bare root: the content's description
/// and the WebRTC connections that opened meanwhile.
async fn describe(
    args: &FetchArgs,
    sources: &Sources,
    discovery: &mut Discovery<Peer>,
    socket: Option<&tokio::net::UdpSocket>,
    rtc: Option<&mut RtcTransport>,
    offered: Vec<u64>,
    clock: &Clock,
) -> Result<(ContentInfo, Vec<u64>), FetchError> {
    eprintln!(
        "asking {} peer(s) for the chunk size and length of {}",
        sources.peers.len() + offered.len(),
        sources.root.to_hex()
    );
    for p in &sources.peers {
        discovery.connect(Peer::Udp(*p), clock.now());
    }
    let (found, opened) = net::discover(
        discovery,
        socket,
        rtc,
        offered,
        clock,
        give_up(
            args.give_up_after,
            &std::cell::Cell::new(Some(Instant::now())),
        ),
    )
    .await;
    let content = match found {
        Some(Ok(content)) => content,
        Some(Err(e)) => return Err(e.into()),
        None => {
            return Err(FetchError::NotDescribed {
                secs: args.give_up_after,
                answered: discovery.answered().count(),
            });
        }
    };
    eprintln!(
        "content: {} bytes in chunks of {} bytes ({})",
        content.content_len, content.chunk_size, content.hash
    );
    Ok((content, opened))
}

/// The engine over a new temporary file beside the output, with the HTTP origin if any.
fn start_engine(
    args: &FetchArgs,
    sources: &Sources,
    content: ContentInfo,
    clock: &Clock,
) -> Result<Engine<Peer, FileStore>, FetchError> {
    let store = FileStore::create_partial(
        &args.output,
        content.content_len,
        content.chunk_size as usize,
    )
    .map_err(|source| FetchError::Write {
        path: args.output.clone(),
        source,
    })?;
    let config = EngineConfig {
        download_limit: args.download_limit,
        seed: crate::random_seed(),
        wall_clock_offset: clock.wall_clock_offset(),
        ..EngineConfig::default()
    };
    let mut engine = Engine::new(config, content, store, clock.now()).map_err(FetchError::Start)?;
    if sources.origin.is_some() {
        let origin_config = HttpOriginConfig {
            // With no peer to wait for, the origin serves everything from the start.
            alone_after: if sources.http_only {
                std::time::Duration::ZERO
            } else {
                HttpOriginConfig::default().alone_after
            },
            ..HttpOriginConfig::default()
        };
        engine.enable_http_origin(origin_config, clock.now());
    }
    Ok(engine)
}

/// Follows a fetch's events: shows progress, says what went wrong, and decides when it
/// is over.
struct Watch<'a> {
    progress: indicatif::ProgressBar,
    content: ContentInfo,
    http_only: bool,
    keep_seeding: bool,
    output: &'a std::path::Path,
    /// The temporary file, for the message of a failed write.
    part: String,
    give_up_after: u64,
    /// When a chunk was last verified (`None` once complete): what `give_up` watches.
    progressed: &'a std::cell::Cell<Option<Instant>>,
    /// A peer or the origin delivered or connected.
    connected: bool,
    outcome: Outcome,
    closed: Vec<String>,
    origin_error: Option<OriginError>,
}

impl<'a> Watch<'a> {
    fn new(
        args: &'a FetchArgs,
        http_only: bool,
        engine: &Engine<Peer, FileStore>,
        progressed: &'a std::cell::Cell<Option<Instant>>,
    ) -> Watch<'a> {
        let content = *engine.content();
        Watch {
            progress: crate::progress::download_bar(content.content_len),
            content,
            http_only,
            keep_seeding: args.keep_seeding,
            output: &args.output,
            part: engine
                .store()
                .temporary_path()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            give_up_after: args.give_up_after,
            progressed,
            connected: false,
            outcome: Outcome::Interrupted,
            closed: Vec::new(),
            origin_error: None,
        }
    }

    fn on_event(&mut self, engine: &mut Engine<Peer, FileStore>, event: Event<Peer>) -> Flow {
        match event {
            Event::Progress { have, .. } => {
                self.progressed.set(Some(Instant::now()));
                self.progress.set_position(
                    have.saturating_mul(u64::from(self.content.chunk_size))
                        .min(self.content.content_len),
                );
                Flow::Continue
            }
            Event::PeerConnected { .. } | Event::ChunkFromOrigin { .. } => {
                self.connected = true;
                Flow::Continue
            }
            Event::ChunkRejected {
                chunk,
                from,
                reason,
            } => {
                self.progress
                    .suspend(|| eprintln!("rejected chunk {chunk} from {from}: {reason}"));
                Flow::Continue
            }
            Event::OriginCorrupt { chunk, reason } if self.http_only => {
                // No peer to fetch it from: waiting would only run out the clock.
                self.stop(FetchError::OriginCorrupt { chunk, reason })
            }
            Event::OriginCorrupt { chunk, reason } => {
                self.progress.suspend(|| {
                    eprintln!(
                        "chunk {chunk} from the HTTP origin failed verification ({reason}): fetching it from peers"
                    )
                });
                Flow::Continue
            }
            Event::OriginFailed {
                error,
                retry_in,
                disabled,
            } => {
                self.origin_error = Some(error.clone());
                let then = match (disabled, retry_in) {
                    (true, _) if engine.peers().count() == 0 && self.http_only => {
                        return self.stop(FetchError::OriginFailed(error));
                    }
                    (true, _) => "it is no longer used".to_string(),
                    (false, Some(wait)) => format!("retrying in {:.1} s", wait.as_secs_f64()),
                    (false, None) => "its chunks come from peers".to_string(),
                };
                self.progress
                    .suspend(|| eprintln!("HTTP origin: {error}; {then}"));
                Flow::Continue
            }
            Event::PeerClosed { peer, reason } => {
                self.closed.push(format!("{peer}: {reason}"));
                // A peer that refused us for want of room is asked again: wait for it
                // (--give-up-after still bounds the wait).
                if engine.peers().count() == 0
                    && !engine.redialing()
                    && !engine.is_complete()
                    && !engine.has_http_origin()
                {
                    self.outcome = Outcome::NoPeers(std::mem::take(&mut self.closed));
                    return Flow::Stop;
                }
                Flow::Continue
            }
            Event::WrongContentLength(wrong) => self.stop(FetchError::WrongLength(wrong)),
            Event::StoreFailed { chunk, error } => self.stop(FetchError::WriteChunk {
                chunk,
                part: self.part.clone(),
                source: error,
            }),
            Event::Complete => {
                self.progressed.set(None);
                self.progress.finish_and_clear();
                // Into place now: with --keep-seeding the process may run for long.
                if let Err(source) = engine.store_mut().commit() {
                    return self.stop(FetchError::Write {
                        path: self.output.to_path_buf(),
                        source,
                    });
                }
                self.outcome = Outcome::Complete;
                if self.keep_seeding {
                    eprintln!("complete; still serving others (Ctrl-C stops)");
                    Flow::Continue
                } else {
                    Flow::Stop
                }
            }
            _ => Flow::Continue,
        }
    }

    /// The fetch failed for `why`.
    fn stop(&mut self, why: FetchError) -> Flow {
        self.outcome = Outcome::Failed(why);
        Flow::Stop
    }

    /// How the run ended, once it has: an interruption after peers went silent for the
    /// give-up time is a stall, and a run that never connected found no peer.
    fn outcome(&mut self, sources: &Sources, rtc_peers: &[String]) -> Outcome {
        self.progress.finish_and_clear();
        let outcome = std::mem::replace(&mut self.outcome, Outcome::Interrupted);
        if self.connected
            && matches!(outcome, Outcome::Interrupted)
            && self
                .progressed
                .get()
                .is_some_and(|at| at.elapsed().as_secs() >= self.give_up_after)
        {
            return Outcome::Stalled;
        }
        if !self.connected && !matches!(outcome, Outcome::NoPeers(_) | Outcome::Failed(_)) {
            let tried: Vec<String> = sources
                .peers
                .iter()
                .map(|p| format!("{p}: no answer"))
                .chain(
                    rtc_peers
                        .iter()
                        .map(|p| format!("webrtc peer {p}: no connection")),
                )
                .collect();
            return Outcome::NoPeers(tried);
        }
        outcome
    }
}

/// Moves a complete download into place and says so, or says why it is not complete
/// (and removes its temporary file).
fn finish(
    args: &FetchArgs,
    sources: &Sources,
    fetched: Fetched,
    started: Instant,
) -> Result<(), FetchError> {
    let Fetched {
        outcome,
        engine,
        ended,
        closed,
        origin_error,
    } = fetched;
    let content = *engine.content();
    let stats = engine.stats();
    let complete = engine.is_complete();
    let mut store = engine.into_store();
    if let Outcome::Failed(why) = outcome {
        store.abandon();
        return Err(why);
    }
    if !complete {
        store.abandon();
        // Boxed: it would make every fetch error as large as itself.
        let origin_error = origin_error.map(Box::new);
        let verified = Verified {
            have: stats.chunks_have,
            count: stats.chunk_count,
            rejected: stats.chunks_rejected,
        };
        return Err(match outcome {
            Outcome::NoPeers(_) if sources.http_only => FetchError::OriginIncomplete {
                verified,
                origin_error,
            },
            Outcome::NoPeers(why) => FetchError::NoPeerLeft {
                why,
                verified,
                origin_error,
            },
            Outcome::Stalled => FetchError::Stalled {
                secs: args.give_up_after,
                peers: ended.len(),
                channels: describe_channels(&ended),
                verified,
                closed,
                origin_error,
            },
            _ => FetchError::Interrupted,
        });
    }
    let path = store.commit().map_err(|source| FetchError::Write {
        path: args.output.clone(),
        source,
    })?;
    let secs = started.elapsed().as_secs_f64();
    eprintln!(
        "fetched {}: {} bytes in {:.2} s ({:.1} MB/s); {} chunks verified, {} rejected; {} datagrams received",
        path.display(),
        content.content_len,
        secs,
        content.content_len as f64 / secs / 1e6,
        stats.chunks_verified,
        stats.chunks_rejected,
        stats.datagrams_received
    );
    Ok(())
}

fn parse_target(text: &str) -> Result<Target, FetchError> {
    let text = text.trim();
    if !text.contains("://") {
        return match Hash::from_hex(text) {
            Some(root) => Ok(Target::Root(root)),
            None => Err(FetchError::NotATarget(text.to_string())),
        };
    }
    text.parse::<SwarmUri>()
        .map(Target::Uri)
        .map_err(|source| FetchError::BadUri {
            text: text.to_string(),
            source,
        })
}

/// Items an error line names in full: beyond, a count, so a URI naming thousands of dead
/// peers still gives a line a person can read.
const LISTED: usize = 8;

/// `items` joined by "; ", the first `LISTED` of them and how many more.
fn listed(items: &[String]) -> String {
    let mut text = items
        .iter()
        .take(LISTED)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join("; ");
    if items.len() > LISTED {
        text.push_str(&format!("; and {} more", items.len() - LISTED));
    }
    text
}
