//! `ppspp fetch URI -o FILE`: download and verify, then rename into place.

use crate::file_store::FileStore;
use crate::net::{self, Flow, Peer};
use crate::rtc::RtcTransport;
use crate::signal::SignalClient;
use crate::stats::StatsPrinter;
use crate::udp::{self, Clock};
use clap::Args;
use ppspp::engine::{Engine, EngineConfig, Event};
use ppspp::uri::SwarmUri;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Instant;

#[derive(Args, Debug)]
pub struct FetchArgs {
    /// The swarm URI printed by `ppspp seed` (ppspp://<root>?len=…).
    uri: String,
    /// Where to write the content (written as FILE.part until verified complete).
    #[arg(short = 'o', long = "output")]
    output: PathBuf,
    /// A UDP peer to fetch from, in addition to those in the URI (repeatable).
    #[arg(long = "udp")]
    udp: Vec<String>,
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
    /// Give up if no peer has answered after this many seconds.
    #[arg(long = "give-up-after", default_value_t = 30)]
    give_up_after: u64,
}

/// At most this many WebRTC peers of the room's `welcome` sample get an offer.
const MAX_RTC_OFFERS: usize = 20;

/// How the fetch ended.
enum Outcome {
    Complete,
    NoPeers(Vec<String>),
    Failed(String),
    Interrupted,
}

/// Resolves if no peer connected within `secs`, or on Ctrl-C/SIGTERM.
async fn give_up(secs: u64, connected: &std::cell::Cell<bool>) {
    let deadline = async {
        tokio::time::sleep(std::time::Duration::from_secs(secs)).await;
        if connected.get() {
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        _ = deadline => {}
        _ = crate::shutdown_signal() => {}
    }
}

pub fn run(args: &FetchArgs) -> Result<(), String> {
    let uri = parse_uri(&args.uri)?;
    let mut peers: Vec<SocketAddr> = Vec::new();
    for p in uri.udp.iter().chain(&args.udp) {
        let addr = p
            .to_socket_addrs()
            .map_err(|e| format!("cannot resolve peer {p}: {e}"))?
            .next()
            .ok_or_else(|| format!("peer {p} has no address"))?;
        peers.push(addr);
    }
    if peers.is_empty() && uri.signal.is_none() {
        return Err(
            "no peer to fetch from: the URI names no udp= peer and no signal= server; add --udp HOST:PORT"
                .into(),
        );
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    // Join the swarm's room before creating any file, so an unreachable server leaves none.
    let mut rtc = match &uri.signal {
        Some(url) => Some(runtime.block_on(async {
            let client = SignalClient::join(url, &uri.root.to_hex()).await?;
            let ip = match args.bind {
                Some(b) if !b.ip().is_unspecified() => b.ip(),
                _ => [127, 0, 0, 1].into(),
            };
            RtcTransport::bind(SocketAddr::new(ip, 0), client)
        })?),
        None => None,
    };
    let rtc_peers: Vec<String> = rtc
        .as_ref()
        .map(|r| r.welcome_peers().into_iter().take(MAX_RTC_OFFERS).collect())
        .unwrap_or_default();
    if peers.is_empty() && rtc_peers.is_empty() {
        return Err(format!(
            "no peer to fetch from: nobody else is in the swarm's room at {}",
            uri.signal.as_deref().unwrap_or("?")
        ));
    }
    let bind = args.bind.unwrap_or_else(|| {
        if peers.iter().all(|p| p.ip().is_loopback()) {
            SocketAddr::from(([127, 0, 0, 1], 0))
        } else {
            SocketAddr::from(([0, 0, 0, 0], 0))
        }
    });
    let content = uri.content();
    let store = FileStore::create_partial(
        &args.output,
        content.content_len,
        content.chunk_size as usize,
    )
    .map_err(|e| format!("cannot create {}.part: {e}", args.output.display()))?;
    let started = Instant::now();
    let (outcome, engine) = runtime.block_on(async {
        let socket = match peers.is_empty() {
            true => None,
            false => Some(udp::bind(bind).map_err(|e| format!("cannot bind UDP {bind}: {e}"))?),
        };
        let clock = Clock::new();
        let config = EngineConfig {
            download_limit: args.download_limit,
            seed: crate::random_seed(),
            ..EngineConfig::default()
        };
        let mut engine = Engine::new(config, content, store, clock.now())
            .map_err(|e| format!("cannot start: {e}"))?;
        for p in &peers {
            engine.connect(Peer::Udp(*p), clock.now());
        }
        if let Some(r) = rtc.as_mut() {
            for p in &rtc_peers {
                r.offer(p)?;
            }
        }
        let progress = crate::progress::download_bar(content.content_len);
        let mut outcome = Outcome::Interrupted;
        let mut closed: Vec<String> = Vec::new();
        let keep = args.keep_seeding;
        let stats = args.stats_json.then(StatsPrinter::new);
        let connected = std::cell::Cell::new(false);
        net::run(
            &mut engine,
            socket.as_ref(),
            rtc.as_mut(),
            &clock,
            stats,
            |engine, event| match event {
                Event::Progress { have, total } => {
                    progress.set_position(
                        have.saturating_mul(u64::from(content.chunk_size))
                            .min(content.content_len),
                    );
                    let _ = total;
                    Flow::Continue
                }
                Event::PeerConnected { .. } => {
                    connected.set(true);
                    Flow::Continue
                }
                Event::ChunkRejected {
                    chunk,
                    from,
                    reason,
                } => {
                    progress.suspend(|| eprintln!("rejected chunk {chunk} from {from}: {reason}"));
                    Flow::Continue
                }
                Event::PeerClosed { peer, reason } => {
                    closed.push(format!("{peer}: {reason}"));
                    if engine.peers().count() == 0 && !engine.is_complete() {
                        outcome = Outcome::NoPeers(std::mem::take(&mut closed));
                        return Flow::Stop;
                    }
                    Flow::Continue
                }
                Event::Complete => {
                    progress.finish_and_clear();
                    // Into place now: with --keep-seeding the process may run for long.
                    if let Err(e) = engine.store_mut().commit() {
                        outcome =
                            Outcome::Failed(format!("cannot write {}: {e}", args.output.display()));
                        return Flow::Stop;
                    }
                    outcome = Outcome::Complete;
                    if keep {
                        eprintln!("complete; still serving others (Ctrl-C stops)");
                        Flow::Continue
                    } else {
                        Flow::Stop
                    }
                }
                _ => Flow::Continue,
            },
            give_up(args.give_up_after, &connected),
        )
        .await;
        progress.finish_and_clear();
        if !connected.get() && !matches!(outcome, Outcome::NoPeers(_)) {
            let tried: Vec<String> = peers
                .iter()
                .map(|p| format!("{p}: no answer"))
                .chain(
                    rtc_peers
                        .iter()
                        .map(|p| format!("webrtc peer {p}: no connection")),
                )
                .collect();
            outcome = Outcome::NoPeers(tried);
        }
        Ok::<_, String>((outcome, engine))
    })?;
    let stats = engine.stats();
    let complete = engine.is_complete();
    let mut store = engine.into_store();
    if let Outcome::Failed(why) = outcome {
        store.abandon();
        return Err(why);
    }
    if !complete {
        store.abandon();
        return Err(match outcome {
            Outcome::NoPeers(why) => format!(
                "could not complete the download: no peer left ({}); {} of {} chunks verified, {} rejected",
                why.join("; "),
                stats.chunks_have,
                stats.chunk_count,
                stats.chunks_rejected
            ),
            _ => "interrupted before the download completed".into(),
        });
    }
    let path = store
        .commit()
        .map_err(|e| format!("cannot write {}: {e}", args.output.display()))?;
    let secs = started.elapsed().as_secs_f64();
    eprintln!(
        "fetched {}: {} bytes in {:.2} s ({:.1} MB/s); {} chunks verified, {} rejected",
        path.display(),
        content.content_len,
        secs,
        content.content_len as f64 / secs / 1e6,
        stats.chunks_verified,
        stats.chunks_rejected
    );
    Ok(())
}

fn parse_uri(text: &str) -> Result<SwarmUri, String> {
    if !text.starts_with("ppspp://")
        && text.len() >= 40
        && text.bytes().all(|b| b.is_ascii_hexdigit())
    {
        return Err(
            "a bare root hash does not say how long the content is; pass the full URI printed by `ppspp seed` (ppspp://<root>?len=…)"
                .into(),
        );
    }
    text.parse::<SwarmUri>()
        .map_err(|e| format!("not a usable swarm URI ({e}): {text}"))
}
