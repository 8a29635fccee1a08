//! Load generator for `ppspp-signal` (`make bench`, BENCHMARKS.md): starts the server (one
//! instance with rooms in memory, or several sharing a `redis-server` it starts too), joins
//! many WebSocket clients to a number of rooms, then has each send signals to peers of its
//! welcome sample at a set overall rate. Prints one JSON line: join → welcome and signal
//! relay latency (p50/p99), the servers' resident memory per client, and their CPU per
//! 1,000 relayed signals (Redis's included). Loopback only; every phase has a deadline.
//!
//! `cargo run --release -p ppspp-signal --example signal-load -- --clients 10000 --rooms 100
//! --instances 2 --redis`

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Parser;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::Semaphore;
use tokio_tungstenite::tungstenite::Message;

#[derive(Parser, Debug)]
struct Args {
    /// WebSocket clients in all.
    #[arg(long, default_value_t = 1000)]
    clients: usize,
    /// Rooms they are spread over (client i joins room i mod rooms).
    #[arg(long, default_value_t = 10)]
    rooms: usize,
    /// Signals each client sends (to peers of its welcome sample).
    #[arg(long, default_value_t = 5)]
    signals: usize,
    /// Signals per second, all clients together.
    #[arg(long, default_value_t = 5000.0)]
    rate: f64,
    /// Server instances (clients spread round-robin); more than one needs --redis.
    #[arg(long, default_value_t = 1)]
    instances: usize,
    /// Rooms in a redis-server started for the run (on a free loopback port).
    #[arg(long)]
    redis: bool,
    /// The server binary (default: target/release/ppspp-signal).
    #[arg(long)]
    server: Option<PathBuf>,
    /// Connections set up at once.
    #[arg(long, default_value_t = 200)]
    concurrency: usize,
}

/// How long each phase may take at most.
const PHASE_LIMIT: Duration = Duration::from_secs(180);

/// A child process killed when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Proc {
    fn pid(&self) -> u32 {
        self.0.id()
    }
}

/// Resident bytes of `pid` (from /proc/PID/statm).
fn rss_bytes(pid: u32) -> u64 {
    let statm = std::fs::read_to_string(format!("/proc/{pid}/statm")).unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    pages * u64::try_from(page).unwrap_or(4096)
}

/// User + system CPU seconds of `pid` (from /proc/PID/stat).
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|s| s.parse::<f64>().ok()).unwrap_or(0.0);
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    // utime and stime are fields 14 and 15; `rest` starts at field 3.
    (ticks(11) + ticks(12)) / hz
}

fn raise_fd_limit() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain calls on a struct we own.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

fn start_redis() -> Result<(Proc, String), String> {
    let port = free_port();
    let child = Command::new("redis-server")
        .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
        .args(["--save", "", "--appendonly", "no", "--maxclients", "1000"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| {
            format!("cannot start redis-server (scripts/setup.sh web installs it): {e}")
        })?;
    let proc = Proc(child);
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(100)).is_err() {
        if Instant::now() > deadline {
            return Err("redis-server did not start".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok((proc, format!("redis://127.0.0.1:{port}")))
}

/// Starts one server instance for `clients` clients (all from 127.0.0.1) of which at most
/// `handshakes` connect at once; returns it and its WebSocket URL.
fn start_server(
    bin: &PathBuf,
    redis: Option<&str>,
    clients: usize,
    handshakes: usize,
) -> Result<(Proc, String), String> {
    let most = (clients + 100).to_string();
    let http = (handshakes * 2 + 16).to_string();
    let mut cmd = Command::new(bin);
    cmd.args(["--bind", "127.0.0.1:0"])
        .args([
            "--max-connections",
            &most,
            "--max-connections-per-ip",
            &most,
        ])
        .args([
            "--max-http-connections",
            &http,
            "--max-http-connections-per-ip",
            &http,
        ])
        .args([
            "--max-peers-per-room",
            &most,
            "--rate",
            "1000",
            "--burst",
            "1000",
        ])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    if let Some(url) = redis {
        cmd.args(["--redis", url]);
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let proc = Proc(child);
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .map_err(|e| format!("reading the banner: {e}"))?;
    let url = line
        .trim()
        .strip_prefix("ppspp-signal listening on ")
        .ok_or_else(|| format!("unexpected banner {line:?}"))?
        .to_owned();
    Ok((proc, url))
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn summary(mut v: Vec<f64>) -> Value {
    v.sort_by(f64::total_cmp);
    let round = |x: f64| (x * 1000.0).round() / 1000.0;
    json!({ "p50": round(percentile(&v, 0.5)), "p99": round(percentile(&v, 0.99)), "max": round(percentile(&v, 1.0)), "n": v.len() })
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Connects and joins; returns the socket, the welcome sample and the join → welcome time.
async fn join(url: &str, room: &str) -> Result<(Ws, Vec<String>, f64), String> {
    let (mut ws, _) = tokio_tungstenite::connect_async(url)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let asked = Instant::now();
    let join = json!({"type": "join", "v": 1, "swarm": room}).to_string();
    ws.send(Message::text(join))
        .await
        .map_err(|e| format!("send: {e}"))?;
    loop {
        match ws.next().await {
            Some(Ok(Message::Text(t))) => {
                let m: Value = serde_json::from_str(t.as_str()).map_err(|e| e.to_string())?;
                if m["type"] == "welcome" {
                    let ms = asked.elapsed().as_secs_f64() * 1000.0;
                    let peers = m["peers"]
                        .as_array()
                        .map(|a| {
                            a.iter()
                                .filter_map(|p| p.as_str().map(str::to_owned))
                                .collect()
                        })
                        .unwrap_or_default();
                    return Ok((ws, peers, ms));
                }
                return Err(format!("join answered with {m}"));
            }
            Some(Ok(_)) => {}
            other => return Err(format!("closed before welcome: {other:?}")),
        }
    }
}

async fn run(args: Args) -> Result<Value, String> {
    if args.instances > 1 && !args.redis {
        return Err("more than one instance needs --redis".into());
    }
    if args.clients == 0 || args.rooms == 0 || args.instances == 0 {
        return Err("--clients, --rooms and --instances must be at least 1".into());
    }
    raise_fd_limit();
    let bin = args.server.clone().unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/release/ppspp-signal")
    });
    let redis = match args.redis {
        true => Some(start_redis()?),
        false => None,
    };
    let mut servers = Vec::new();
    for _ in 0..args.instances {
        let here = args.clients.div_ceil(args.instances);
        let redis_url = redis.as_ref().map(|r| r.1.as_str());
        servers.push(start_server(&bin, redis_url, here, args.concurrency)?);
    }
    let pids: Vec<u32> = servers.iter().map(|(p, _)| p.pid()).collect();
    let redis_pid = redis.as_ref().map(|(p, _)| p.pid());
    let rss_before: u64 = pids.iter().map(|p| rss_bytes(*p)).sum();
    let redis_rss_before = redis_pid.map_or(0, rss_bytes);
    let started = Instant::now();

    // Join phase.
    let slots = Arc::new(Semaphore::new(args.concurrency.max(1)));
    let mut joins = Vec::with_capacity(args.clients);
    for i in 0..args.clients {
        let url = servers[i % servers.len()].1.clone();
        let room = format!("{:040x}", i % args.rooms + 1);
        let slots = slots.clone();
        joins.push(tokio::spawn(async move {
            let _slot = slots.acquire_owned().await.map_err(|e| e.to_string())?;
            join(&url, &room).await
        }));
    }
    let mut sockets = Vec::with_capacity(args.clients);
    let mut join_ms = Vec::with_capacity(args.clients);
    let mut failures: HashMap<String, usize> = HashMap::new();
    let deadline = tokio::time::Instant::now() + PHASE_LIMIT;
    for j in joins {
        match tokio::time::timeout_at(deadline, j).await {
            Ok(Ok(Ok((ws, peers, ms)))) => {
                join_ms.push(ms);
                sockets.push((ws, peers));
            }
            Ok(Ok(Err(e))) => *failures.entry(e.chars().take(80).collect()).or_default() += 1,
            Ok(Err(e)) => *failures.entry(e.to_string()).or_default() += 1,
            Err(_) => return Err("the join phase ran out of time".into()),
        }
    }
    let join_wall_s = started.elapsed().as_secs_f64();
    // Let the servers settle (the last queued frames written) before reading their memory.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let joined = sockets.len();
    let rss_after: u64 = pids.iter().map(|p| rss_bytes(*p)).sum();
    let redis_rss_after = redis_pid.map_or(0, rss_bytes);

    // Relay phase: each client sends `signals` signals to random peers of its sample, spread
    // so that all clients together send `rate` a second; every client reads what it gets.
    let clock = Instant::now();
    let latencies = Arc::new(Mutex::new(Vec::<f64>::new()));
    let senders = sockets.iter().filter(|(_, p)| !p.is_empty()).count();
    let expected = senders * args.signals;
    let period = Duration::from_secs_f64(senders.max(1) as f64 / args.rate.max(1.0));
    let cpu_before: f64 = pids
        .iter()
        .chain(redis_pid.iter())
        .map(|p| cpu_seconds(*p))
        .sum();
    let relay_started = Instant::now();
    let mut tasks = Vec::with_capacity(joined);
    for (n, (ws, peers)) in sockets.into_iter().enumerate() {
        let (mut sink, mut stream) = ws.split();
        let latencies = latencies.clone();
        let signals = if peers.is_empty() { 0 } else { args.signals };
        // Spread the first sends over one period.
        let offset = period.mul_f64((n as f64 * 0.618_033_988_75).fract());
        let reader = tokio::spawn(async move {
            while let Some(Ok(m)) = stream.next().await {
                let Message::Text(t) = m else { continue };
                let Ok(v) = serde_json::from_str::<Value>(t.as_str()) else {
                    continue;
                };
                if v["type"] == "signal"
                    && let Some(sent) = v["data"]["t"].as_f64()
                {
                    let now = clock.elapsed().as_secs_f64() * 1e6;
                    latencies
                        .lock()
                        .expect("latencies")
                        .push((now - sent) / 1000.0);
                }
            }
        });
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep(offset).await;
            for k in 0..signals {
                let to = &peers[(n + k) % peers.len()];
                let t = clock.elapsed().as_secs_f64() * 1e6;
                let msg =
                    json!({"type": "signal", "to": to, "data": {"t": t, "sdp": "x".repeat(200)}});
                if sink.send(Message::text(msg.to_string())).await.is_err() {
                    break;
                }
                tokio::time::sleep(period).await;
            }
            (sink, reader)
        }));
    }
    let mut ends = Vec::with_capacity(tasks.len());
    let deadline = tokio::time::Instant::now() + PHASE_LIMIT;
    for t in tasks {
        match tokio::time::timeout_at(deadline, t).await {
            Ok(Ok(end)) => ends.push(end),
            Ok(Err(e)) => return Err(format!("a sender failed: {e}")),
            Err(_) => return Err("the relay phase ran out of time".into()),
        }
    }
    // Wait for what is still on its way (bounded).
    let drain_until = Instant::now() + Duration::from_secs(10);
    while latencies.lock().expect("latencies").len() < expected && Instant::now() < drain_until {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let relay_wall_s = relay_started.elapsed().as_secs_f64();
    let cpu_after: f64 = pids
        .iter()
        .chain(redis_pid.iter())
        .map(|p| cpu_seconds(*p))
        .sum();
    let relay_ms = std::mem::take(&mut *latencies.lock().expect("latencies"));
    let delivered = relay_ms.len();
    for (mut sink, reader) in ends {
        let _ = sink.close().await;
        reader.abort();
    }
    drop(servers);
    drop(redis);
    let per = |bytes: u64, before: u64| {
        (bytes.saturating_sub(before) as f64 / joined.max(1) as f64).round()
    };
    Ok(json!({
        "mode": if args.redis { "redis" } else { "memory" },
        "instances": args.instances,
        "clients": args.clients,
        "rooms": args.rooms,
        "joined": joined,
        "join_failures": failures,
        "join_wall_s": (join_wall_s * 100.0).round() / 100.0,
        "join_ms": summary(join_ms),
        "signals_sent": expected,
        "signals_delivered": delivered,
        "signal_rate": args.rate,
        "relay_wall_s": (relay_wall_s * 100.0).round() / 100.0,
        "relay_ms": summary(relay_ms),
        "server_rss_bytes_per_client": per(rss_after, rss_before),
        "redis_rss_bytes_per_client": per(redis_rss_after, redis_rss_before),
        "cpu_s_per_1000_signals": ((cpu_after - cpu_before) / (delivered.max(1) as f64 / 1000.0) * 10_000.0).round() / 10_000.0,
    }))
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args = Args::parse();
    match run(args).await {
        Ok(v) => {
            println!("{v}");
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("signal-load: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
