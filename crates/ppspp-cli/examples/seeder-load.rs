//! Load on one native seeder (how many peers it serves; `make bench` part `scale`):
//! `ppspp seed` runs in a process of its own, and this one runs `--peers` light peers, each
//! an engine with its own UDP socket or WebRTC transport and its own signaling connection,
//! driven by the same loop as `ppspp fetch` (`ppspp_cli::net::run`), all on one thread.
//!
//! - `--transport webrtc`: page-like peers. Each offers to the seeder alone (so the figures
//!   are the seeder's, not a swarm's) and downloads at most `--rate` bytes a second, as a
//!   page filling its read-ahead does.
//! - `--transport udp`: like as many `ppspp fetch` processes: the seeder's address, and
//!   with `--pex` the other fetchers the seeder tells of (peer exchange, as `fetch` does).
//!
//! Peers start `--arrival-ms` apart. Per peer: the time to its first verified chunk and its
//! rate (content ÷ first to last chunk); for the seeder: its upload, CPU time and resident
//! memory (`/proc`), at rest and at its peak. One JSON line on stdout; exit status 1 unless
//! every peer completed. Everything is on loopback and stops by itself (`--give-up-after`).

use ppspp::engine::{ContentInfo, Engine, EngineConfig, Event};
use ppspp::store::MemoryStore;
use ppspp::uri::SwarmUri;
use ppspp_cli::net::{self, Flow, Links, Peer};
use ppspp_cli::rtc::RtcTransport;
use ppspp_cli::signal::SignalClient;
use ppspp_cli::udp::{self, Clock};
use serde_json::{Value, json};
use std::cell::RefCell;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::rc::Rc;
use std::time::{Duration, Instant};

#[derive(Clone, Copy, PartialEq)]
enum Transport {
    Udp,
    WebRtc,
}

struct Args {
    transport: Transport,
    peers: usize,
    content_bytes: usize,
    chunk_size: usize,
    rate: Option<u64>,
    arrival: Duration,
    give_up_after: Duration,
    pex: bool,
    max_peers: usize,
    ppspp: PathBuf,
    signal_bin: PathBuf,
}

const USAGE: &str = "usage: seeder-load --transport udp|webrtc --peers N [--content-bytes B] \
[--chunk-size B] [--rate BYTES_PER_S] [--arrival-ms MS] [--give-up-after S] [--pex] \
[--max-peers N] [--ppspp PATH] [--signal-bin PATH]";

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        transport: Transport::Udp,
        peers: 10,
        content_bytes: 256 * 1024,
        chunk_size: 8192,
        rate: None,
        arrival: Duration::from_millis(5),
        give_up_after: Duration::from_secs(120),
        pex: false,
        max_peers: 256,
        ppspp: PathBuf::from("target/release/ppspp"),
        signal_bin: PathBuf::from("target/release/ppspp-signal"),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--pex" {
            a.pex = true;
            continue;
        }
        let value = it
            .next()
            .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
        let num = |v: &str| -> Result<u64, String> {
            v.parse::<u64>()
                .map_err(|_| format!("{flag}: not a number: {v}"))
        };
        match flag.as_str() {
            "--transport" => {
                a.transport = match value.as_str() {
                    "udp" => Transport::Udp,
                    "webrtc" => Transport::WebRtc,
                    _ => return Err(format!("--transport: udp or webrtc, not {value}")),
                }
            }
            "--peers" => a.peers = num(&value)? as usize,
            "--content-bytes" => a.content_bytes = num(&value)? as usize,
            "--chunk-size" => a.chunk_size = num(&value)? as usize,
            "--rate" => a.rate = Some(num(&value)?).filter(|&r| r > 0),
            "--arrival-ms" => a.arrival = Duration::from_millis(num(&value)?),
            "--give-up-after" => a.give_up_after = Duration::from_secs(num(&value)?),
            "--max-peers" => a.max_peers = num(&value)? as usize,
            "--ppspp" => a.ppspp = PathBuf::from(value),
            "--signal-bin" => a.signal_bin = PathBuf::from(value),
            _ => return Err(format!("unknown flag {flag}\n{USAGE}")),
        }
    }
    if a.peers == 0 || a.content_bytes == 0 {
        return Err("--peers and --content-bytes must be at least 1".into());
    }
    Ok(a)
}

/// A child process killed when dropped, so that no failure path leaves one behind.
struct Kill(Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// CPU seconds (user + system) and resident bytes of process `pid`, from `/proc`.
fn proc_usage(pid: u32) -> (f64, u64) {
    let ticks = 100.0; // USER_HZ on Linux
    let cpu = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            // Fields after the command name, which may hold spaces: utime and stime are the
            // 12th and 13th of them.
            let rest = &s[s.rfind(')')? + 2..];
            let f: Vec<&str> = rest.split(' ').collect();
            Some((f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?) / ticks)
        })
        .unwrap_or(0.0);
    let rss = std::fs::read_to_string(format!("/proc/{pid}/statm"))
        .ok()
        .and_then(|s| s.split(' ').nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096);
    (cpu, rss)
}

/// Starts `ppspp-signal` on a free loopback port; returns it and its URL.
fn start_signal(bin: &Path) -> Result<(Kill, String), String> {
    let mut child = Command::new(bin)
        .args(["--bind", "127.0.0.1:0"])
        // Every light peer connects from 127.0.0.1, and the seeder answers them all.
        .args(["--max-connections", "100000"])
        .args(["--max-connections-per-ip", "100000"])
        .args(["--max-http-connections-per-ip", "100000"])
        .args(["--max-peers-per-room", "100000"])
        .args(["--rate", "100000", "--burst", "100000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
    let mut line = String::new();
    BufReader::new(child.stdout.take().ok_or("no stdout")?)
        .read_line(&mut line)
        .map_err(|e| e.to_string())?;
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("ws://"))
        .ok_or_else(|| format!("ppspp-signal printed no URL: {line}"))?
        .to_string();
    Ok((Kill(child), url))
}

/// What the seeder says on its way up: its URI, its peer id at the signaling server (if
/// any), and its `--stats-json` lines as they come.
struct Seeder {
    child: Kill,
    uri: SwarmUri,
    peer_id: Option<String>,
    uploaded: Rc<RefCell<u64>>,
}

fn start_seeder(a: &Args, file: &Path, signal: Option<&str>) -> Result<Seeder, String> {
    let mut cmd = Command::new(&a.ppspp);
    cmd.arg("seed")
        .arg(file)
        .args(["--chunk-size", &a.chunk_size.to_string()])
        .args(["--max-peers", &a.max_peers.to_string()])
        .arg("--stats-json");
    match signal {
        Some(url) => cmd.args(["--signal", url]),
        None => cmd.args(["--udp", "127.0.0.1:0"]),
    };
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", a.ppspp.display()))?;
    let mut out = BufReader::new(child.stdout.take().ok_or("no stdout")?);
    let mut err = BufReader::new(child.stderr.take().ok_or("no stderr")?);
    let child = Kill(child);
    let mut line = String::new();
    out.read_line(&mut line).map_err(|e| e.to_string())?;
    let uri: SwarmUri = line
        .trim()
        .parse()
        .map_err(|e| format!("the seeder printed no URI ({e}): {line}"))?;
    // "seeding FILE on udp ADDR" or "... on webrtc ADDR via URL (peer ID)".
    let peer_id;
    loop {
        let mut l = String::new();
        if err.read_line(&mut l).map_err(|e| e.to_string())? == 0 {
            return Err("the seeder exited before serving".into());
        }
        if l.starts_with("seeding ") {
            peer_id = l
                .split("(peer ")
                .nth(1)
                .and_then(|r| r.split(')').next())
                .map(str::to_string);
            break;
        }
    }
    // Its stderr says who came and went: read and drop it, so it never blocks.
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut err, &mut std::io::sink());
    });
    let uploaded = Rc::new(RefCell::new(0u64));
    let (tx, rx) = std::sync::mpsc::channel::<u64>();
    std::thread::spawn(move || {
        for l in out.lines() {
            let Ok(l) = l else { break };
            if let Ok(v) = serde_json::from_str::<Value>(&l)
                && let Some(b) = v["bytes_uploaded"].as_u64()
            {
                let _ = tx.send(b);
            }
        }
    });
    let up = uploaded.clone();
    tokio::task::spawn_local(async move {
        loop {
            while let Ok(b) = rx.try_recv() {
                *up.borrow_mut() = b;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
    if signal.is_some() && peer_id.is_none() {
        return Err("the seeder did not say its peer id".into());
    }
    Ok(Seeder {
        child,
        uri,
        peer_id,
        uploaded,
    })
}

/// One light peer's times, from its start.
#[derive(Default, Clone)]
struct PeerRun {
    connected: Option<Duration>,
    first_chunk: Option<Duration>,
    complete: Option<Duration>,
    error: Option<String>,
}

/// Where a light peer finds the seeder.
enum Target {
    Udp(SocketAddr),
    Rtc { url: String, seeder: String },
}

async fn light_peer(
    target: Rc<Target>,
    content: ContentInfo,
    config: EngineConfig,
    give_up_after: Duration,
    live: Rc<RefCell<Live>>,
) -> PeerRun {
    let started = Instant::now();
    let mut run = PeerRun::default();
    let clock = Clock::new();
    let store = MemoryStore::new(content.content_len as usize, content.chunk_size as usize);
    let mut engine = match Engine::new(config, content, store, clock.now()) {
        Ok(e) => e,
        Err(e) => {
            run.error = Some(e.to_string());
            return run;
        }
    };
    let (socket, mut rtc) = match &*target {
        Target::Udp(addr) => match udp::bind(SocketAddr::from(([127, 0, 0, 1], 0))) {
            Ok(s) => {
                engine.connect(Peer::Udp(*addr), clock.now());
                (Some(s), None)
            }
            Err(e) => {
                run.error = Some(format!("cannot bind UDP: {e}"));
                return run;
            }
        },
        Target::Rtc { url, seeder } => {
            let room = content.root.to_hex();
            let made = async {
                let client = SignalClient::join(url, &room).await?;
                let mut t = RtcTransport::bind(
                    SocketAddr::from(([127, 0, 0, 1], 0)),
                    client,
                    &room,
                    ppspp_cli::rtc::RtcConfig::default(),
                )?;
                t.offer(seeder)?;
                Ok::<_, String>(t)
            };
            match made.await {
                Ok(t) => (None, Some(t)),
                Err(e) => {
                    run.error = Some(e);
                    return run;
                }
            }
        }
    };
    let progressed = std::cell::Cell::new(Instant::now());
    let stop = async {
        loop {
            let at = progressed.get() + give_up_after;
            if Instant::now() >= at {
                return;
            }
            tokio::time::sleep_until(at.into()).await;
        }
    };
    let mut counted = false;
    net::run(
        &mut engine,
        Links {
            udp: socket.as_ref(),
            rtc: rtc.as_mut(),
            origin: None,
            live: None,
            metrics: None,
        },
        &clock,
        None,
        |engine, event| {
            match event {
                Event::PeerConnected { .. } if run.connected.is_none() => {
                    run.connected = Some(started.elapsed());
                    live.borrow_mut().connected(1);
                    counted = true;
                }
                Event::Progress { .. } => {
                    progressed.set(Instant::now());
                    run.first_chunk.get_or_insert(started.elapsed());
                }
                Event::Complete => {
                    run.complete = Some(started.elapsed());
                    return Flow::Stop;
                }
                Event::PeerClosed { peer, reason }
                    if engine.peers().count() == 0 && !engine.redialing() =>
                {
                    run.error = Some(format!("{peer} closed: {reason}"));
                    return Flow::Stop;
                }
                _ => {}
            }
            Flow::Continue
        },
        stop,
    )
    .await;
    if counted {
        live.borrow_mut().connected(-1);
    }
    if run.complete.is_none() && run.error.is_none() {
        let s = engine.stats();
        run.error = Some(format!(
            "no progress for {} s ({} of {} chunks)",
            give_up_after.as_secs(),
            s.chunks_have,
            s.chunk_count
        ));
    }
    run
}

/// Peers connected to the seeder now, and at most.
#[derive(Default)]
struct Live {
    now: i64,
    max: i64,
}

impl Live {
    fn connected(&mut self, d: i64) {
        self.now += d;
        self.max = self.max.max(self.now);
    }
}

fn percentile(xs: &mut [f64], p: f64) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    xs.sort_by(|a, b| a.total_cmp(b));
    let i = ((xs.len() - 1) as f64 * p).round() as usize;
    xs[i]
}

fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

/// Content that differs per run: a simple generator is enough (no property rests on it).
fn content(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

async fn measure(a: Args) -> Result<Value, String> {
    let dir = std::env::temp_dir().join(format!("seeder-load-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let file = dir.join("content.bin");
    std::fs::write(&file, content(a.content_bytes, std::process::id() as u64))
        .map_err(|e| e.to_string())?;
    let signal = match a.transport {
        Transport::WebRtc => Some(start_signal(&a.signal_bin)?),
        Transport::Udp => None,
    };
    let seeder = start_seeder(&a, &file, signal.as_ref().map(|s| s.1.as_str()));
    let _ = std::fs::remove_dir_all(&dir); // the seeder holds the file open
    let seeder = seeder?;
    let pid = seeder.child.0.id();
    let target = Rc::new(match (&signal, &seeder.peer_id) {
        (Some((_, url)), Some(id)) => Target::Rtc {
            url: url.clone(),
            seeder: id.clone(),
        },
        _ => Target::Udp(
            seeder
                .uri
                .udp
                .first()
                .and_then(|u| u.parse().ok())
                .ok_or("the seeder's URI names no UDP address")?,
        ),
    });
    let content = seeder.uri.content();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (cpu_before, rss_before) = proc_usage(pid);
    let self_cpu_before = proc_usage(std::process::id()).0;
    let live = Rc::new(RefCell::new(Live::default()));
    let rss_peak = Rc::new(RefCell::new((rss_before, 0i64)));
    let sampler = {
        let (peak, live) = (rss_peak.clone(), live.clone());
        tokio::task::spawn_local(async move {
            loop {
                let rss = proc_usage(pid).1;
                {
                    let mut p = peak.borrow_mut();
                    if rss > p.0 {
                        *p = (rss, live.borrow().now);
                    }
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
    };
    let started = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..a.peers {
        let config = EngineConfig {
            download_limit: a.rate,
            pex: a.pex,
            seed: ppspp_cli::random_seed() ^ i as u64,
            ..EngineConfig::default()
        };
        tasks.push(tokio::task::spawn_local(light_peer(
            target.clone(),
            content,
            config,
            a.give_up_after,
            live.clone(),
        )));
        // None apart: every peer starts before any runs (one thread runs them all).
        if !a.arrival.is_zero() {
            tokio::time::sleep(a.arrival).await;
        }
    }
    let mut runs = Vec::new();
    for t in tasks {
        runs.push(t.await.unwrap_or_else(|e| PeerRun {
            error: Some(e.to_string()),
            ..PeerRun::default()
        }));
    }
    let wall = started.elapsed().as_secs_f64();
    sampler.abort();
    // The seeder's last stats line (once a second) covers the run.
    tokio::time::sleep(Duration::from_millis(1300)).await;
    let (cpu_after, _) = proc_usage(pid);
    let self_cpu = proc_usage(std::process::id()).0 - self_cpu_before;
    let uploaded = *seeder.uploaded.borrow();
    let (rss_peak, at_peak) = *rss_peak.borrow();
    let complete = runs.iter().filter(|r| r.complete.is_some()).count();
    let mut first: Vec<f64> = runs
        .iter()
        .filter_map(|r| r.first_chunk.map(|t| t.as_secs_f64() * 1e3))
        .collect();
    let mut rates: Vec<f64> = runs
        .iter()
        .filter_map(|r| match (r.first_chunk, r.complete) {
            (Some(f), Some(c)) if c > f => Some(content.content_len as f64 / (c - f).as_secs_f64()),
            _ => None,
        })
        .collect();
    let errors: Vec<String> = runs
        .iter()
        .enumerate()
        .filter_map(|(i, r)| r.error.as_ref().map(|e| format!("peer {i}: {e}")))
        .take(5)
        .collect();
    let delivered = complete as f64 * content.content_len as f64;
    let max_connected = live.borrow().max;
    Ok(json!({
        "transport": match a.transport { Transport::Udp => "udp", Transport::WebRtc => "webrtc" },
        "peers": a.peers,
        "complete": complete,
        "max_connected": max_connected,
        "content_bytes": content.content_len,
        "chunk_size": content.chunk_size,
        "rate_limit_bytes_per_s": a.rate,
        "pex": a.pex,
        "wall_s": round(wall, 2),
        "first_chunk_ms_p50": round(percentile(&mut first, 0.5), 1),
        "first_chunk_ms_p99": round(percentile(&mut first, 0.99), 1),
        "peer_rate_bytes_per_s_min": round(percentile(&mut rates, 0.0), 0),
        "peer_rate_bytes_per_s_p10": round(percentile(&mut rates, 0.1), 0),
        "peer_rate_bytes_per_s_p50": round(percentile(&mut rates, 0.5), 0),
        "seeder_upload_ratio": round(uploaded as f64 / delivered.max(1.0), 3),
        "seeder_upload_bytes_per_s": round(uploaded as f64 / wall, 0),
        "seeder_cpu_s": round(cpu_after - cpu_before, 2),
        "seeder_cpu_s_per_mb": round((cpu_after - cpu_before) / (uploaded.max(1) as f64 / 1e6), 4),
        "seeder_rss_bytes_at_rest": rss_before,
        "seeder_rss_bytes_peak": rss_peak,
        "connected_at_peak": at_peak,
        "seeder_rss_bytes_per_peer": match at_peak {
            n if n > 0 => json!(((rss_peak - rss_before) as f64 / n as f64).round()),
            _ => Value::Null,
        },
        "load_cpu_s": round(self_cpu, 2),
        "errors": errors,
    }))
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("seeder-load: {e}");
            return ExitCode::from(2);
        }
    };
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("seeder-load: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let peers = args.peers;
    let local = tokio::task::LocalSet::new();
    match local.block_on(&runtime, measure(args)) {
        Ok(summary) => {
            println!("{summary}");
            if summary["complete"].as_u64() == Some(peers as u64) {
                ExitCode::SUCCESS
            } else {
                eprintln!(
                    "seeder-load: {} of {peers} peers completed",
                    summary["complete"]
                );
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("seeder-load: {e}");
            ExitCode::FAILURE
        }
    }
}
