//! `ppspp-signal`: runs the signaling server. A thin wrapper over [`ppspp_signal::serve`].

use std::io::{IsTerminal, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use ppspp_signal::{AsTable, Config, RedisConfig, TurnSecret, WS_PATH};
use tracing_subscriber::EnvFilter;

/// WebSocket signaling server and tracker for ppspp-web peers.
///
/// Every flag can also be set by the environment variable named in its help. Logs go to
/// stderr (filter with RUST_LOG, default "info"); the first line on stdout is the address,
/// e.g. "ppspp-signal listening on ws://127.0.0.1:8787/ws".
#[derive(Parser, Debug)]
#[command(name = "ppspp-signal", version, about, long_about = None)]
struct Args {
    /// Address to listen on; port 0 picks a free port. Loopback by default: put a TLS
    /// proxy in front to serve the Internet.
    #[arg(long, env = "PPSPP_SIGNAL_BIND", default_value = "127.0.0.1:8787")]
    bind: SocketAddr,
    /// Largest client frame in bytes; larger ones get `too-large` and are closed.
    #[arg(long, env = "PPSPP_SIGNAL_MAX_MESSAGE_BYTES", default_value_t = Config::default().max_message_bytes)]
    max_message_bytes: usize,
    /// Most peers in one room.
    #[arg(long, env = "PPSPP_SIGNAL_MAX_PEERS_PER_ROOM", default_value_t = Config::default().max_peers_per_room)]
    max_peers_per_room: usize,
    /// Most rooms at once.
    #[arg(long, env = "PPSPP_SIGNAL_MAX_ROOMS", default_value_t = Config::default().max_rooms)]
    max_rooms: usize,
    /// Most WebSocket connections at once (the process raises its open-file limit to fit
    /// when the hard limit allows).
    #[arg(long, env = "PPSPP_SIGNAL_MAX_CONNECTIONS", default_value_t = Config::default().max_connections)]
    max_connections: usize,
    /// Most WebSocket connections from one client address (IPv4, or IPv6 /64; the TCP
    /// peer's address, so behind a proxy the proxy's).
    #[arg(long, env = "PPSPP_SIGNAL_MAX_CONNECTIONS_PER_IP", default_value_t = Config::default().max_connections_per_ip)]
    max_connections_per_ip: usize,
    /// Most HTTP connections not upgraded to WebSocket (health checks, handshakes in
    /// progress); further TCP connections are closed at once.
    #[arg(long, env = "PPSPP_SIGNAL_MAX_HTTP_CONNECTIONS", default_value_t = Config::default().max_http_connections)]
    max_http_connections: usize,
    /// Most HTTP connections not upgraded to WebSocket from one client address.
    #[arg(long, env = "PPSPP_SIGNAL_MAX_HTTP_CONNECTIONS_PER_IP", default_value_t = Config::default().max_http_connections_per_ip)]
    max_http_connections_per_ip: usize,
    /// Seconds an HTTP connection may take to send a request head.
    #[arg(long, env = "PPSPP_SIGNAL_HTTP_HEADER_TIMEOUT", default_value_t = Config::default().http_header_timeout.as_secs_f64())]
    http_header_timeout: f64,
    /// Most peers listed in a `welcome`.
    #[arg(long, env = "PPSPP_SIGNAL_SAMPLE_SIZE", default_value_t = Config::default().sample_size)]
    sample_size: usize,
    /// Share of a welcome's sample drawn from the whole room at random (0 to 1); the rest
    /// are the closest peers: same address block, then same AS (--as-table).
    #[arg(long, env = "PPSPP_SIGNAL_RANDOM_SAMPLE_SHARE", default_value_t = Config::default().random_sample_share)]
    random_sample_share: f64,
    /// IPv4 prefix length of the address block peers share to count as close (0: none).
    #[arg(long, env = "PPSPP_SIGNAL_LOCALITY_V4_PREFIX", default_value_t = Config::default().locality_v4_prefix)]
    locality_v4_prefix: u8,
    /// IPv6 prefix length of the same (0: none).
    #[arg(long, env = "PPSPP_SIGNAL_LOCALITY_V6_PREFIX", default_value_t = Config::default().locality_v6_prefix)]
    locality_v6_prefix: u8,
    /// Prefix-to-AS table in CAIDA's pfx2as format (address, length, AS per line): peers
    /// of the newcomer's AS are offered after those of its block.
    #[arg(long, value_name = "FILE", env = "PPSPP_SIGNAL_AS_TABLE")]
    as_table: Option<PathBuf>,
    /// Request header with the client's address, set by the proxy in front (e.g.
    /// X-Real-IP), for locality; only behind a proxy that always sets it.
    #[arg(long, value_name = "NAME", env = "PPSPP_SIGNAL_CLIENT_IP_HEADER")]
    client_ip_header: Option<String>,
    /// Messages per second a client may send on average (token-bucket refill).
    #[arg(long, env = "PPSPP_SIGNAL_RATE", default_value_t = Config::default().rate_per_sec)]
    rate: f64,
    /// Messages a client may send in a burst (token-bucket depth).
    #[arg(long, env = "PPSPP_SIGNAL_BURST", default_value_t = Config::default().rate_burst)]
    burst: f64,
    /// Seconds without any frame from a client (not even a pong) before it is closed.
    #[arg(long, env = "PPSPP_SIGNAL_IDLE_TIMEOUT", default_value_t = Config::default().idle_timeout.as_secs_f64())]
    idle_timeout: f64,
    /// Seconds between the server's pings.
    #[arg(long, env = "PPSPP_SIGNAL_PING_INTERVAL", default_value_t = Config::default().ping_interval.as_secs_f64())]
    ping_interval: f64,
    /// Bytes queued for one client: signals may fill three quarters (beyond, the sender
    /// gets `peer-busy`), `peer-left` notices the rest (beyond, the client is dropped as a
    /// slow reader).
    #[arg(long, env = "PPSPP_SIGNAL_OUTBOUND_QUEUE_BYTES", default_value_t = Config::default().outbound_queue_bytes)]
    outbound_queue_bytes: usize,
    /// Bytes of one sender's signals queued for one client (beyond, `peer-busy`).
    #[arg(long, env = "PPSPP_SIGNAL_OUTBOUND_QUEUE_BYTES_PER_SENDER", default_value_t = Config::default().outbound_queue_bytes_per_sender)]
    outbound_queue_bytes_per_sender: usize,
    /// `peer-left` notices per second a room may send to peers that did not know the
    /// leaver (those that did are always told).
    #[arg(long, env = "PPSPP_SIGNAL_ROOM_NOTICE_RATE", default_value_t = Config::default().room_notice_rate)]
    room_notice_rate: f64,
    /// Seconds one write to a client may take before the connection is dropped.
    #[arg(long, env = "PPSPP_SIGNAL_WRITE_TIMEOUT", default_value_t = Config::default().write_timeout.as_secs_f64())]
    write_timeout: f64,
    /// Seconds to wait for connections to close on shutdown.
    #[arg(long, env = "PPSPP_SIGNAL_SHUTDOWN_GRACE", default_value_t = Config::default().shutdown_grace.as_secs_f64())]
    shutdown_grace: f64,
    /// A STUN server for the clients, e.g. stun:turn.example.org:3478 (repeat the flag, or
    /// separate with commas). Sent in every welcome's iceServers.
    #[arg(
        long = "stun-url",
        value_name = "URL",
        env = "PPSPP_SIGNAL_STUN_URLS",
        value_delimiter = ','
    )]
    stun_urls: Vec<String>,
    /// A TURN server for the clients, e.g. turn:turn.example.org:3478?transport=udp (repeat,
    /// or separate with commas). Each welcome lists them with a credential of its own; needs
    /// the TURN server's shared secret (--turn-secret-file or PPSPP_SIGNAL_TURN_SECRET).
    #[arg(
        long = "turn-url",
        value_name = "URL",
        env = "PPSPP_SIGNAL_TURN_URLS",
        value_delimiter = ','
    )]
    turn_urls: Vec<String>,
    /// File holding the TURN server's shared secret (coturn's static-auth-secret; whitespace
    /// around it is ignored). The environment variable PPSPP_SIGNAL_TURN_SECRET may hold the
    /// secret itself instead; there is no flag for it, so it never shows in a process list.
    #[arg(long, value_name = "FILE", env = "PPSPP_SIGNAL_TURN_SECRET_FILE")]
    turn_secret_file: Option<PathBuf>,
    /// Seconds a TURN credential stays valid after the join it was issued for (1 s to 7
    /// days).
    #[arg(long, env = "PPSPP_SIGNAL_TURN_TTL", default_value_t = Config::default().turn_credential_ttl.as_secs_f64())]
    turn_ttl: f64,
    /// Seconds between the figures pages report when their site opted in (bytes from
    /// peers, HTTP and seeders, stalls), aggregated per swarm on /metrics; 5 to 3600, or 0
    /// to take no reports.
    #[arg(long, env = "PPSPP_SIGNAL_REPORT_EVERY", default_value_t = Config::default().report_every.as_secs())]
    report_every: u64,
    /// Peers a room needs before peer-to-peer starts (0: always): below, welcomes list no
    /// peers and pages play from their HTTP origin.
    #[arg(long, env = "PPSPP_SIGNAL_P2P_MIN_PEERS", default_value_t = Config::default().p2p_min_peers)]
    p2p_min_peers: usize,
    /// Keep rooms in this Redis (6.2 or newer), shared with every instance given the same
    /// URL and prefix, instead of in this process: `redis://[:PASSWORD@]HOST[:PORT][/DB]`.
    /// Prefer the environment variable when the URL holds a password.
    #[arg(long, value_name = "URL", env = "PPSPP_SIGNAL_REDIS")]
    redis: Option<String>,
    /// Prefix of the keys and channels in Redis (sites sharing one Redis need different ones).
    #[arg(
        long,
        value_name = "PREFIX",
        env = "PPSPP_SIGNAL_REDIS_PREFIX",
        requires = "redis",
        default_value = "ppspp-signal"
    )]
    redis_prefix: String,
    /// Seconds after which the peers of an instance that stopped refreshing them (it died)
    /// are removed from their rooms.
    #[arg(
        long,
        value_name = "SECONDS",
        env = "PPSPP_SIGNAL_REDIS_PEER_TTL",
        requires = "redis",
        default_value_t = 15.0
    )]
    redis_peer_ttl: f64,
}

/// The environment variable that may hold the TURN secret itself.
const TURN_SECRET_ENV: &str = "PPSPP_SIGNAL_TURN_SECRET";

fn seconds(name: &str, s: f64) -> Result<Duration, String> {
    Duration::try_from_secs_f64(s).map_err(|_| format!("--{name} must be a non-negative number"))
}

impl Args {
    /// The TURN secret from `--turn-secret-file` or `PPSPP_SIGNAL_TURN_SECRET` (not both).
    fn turn_secret(&self) -> Result<Option<TurnSecret>, String> {
        let from_env = std::env::var_os(TURN_SECRET_ENV).filter(|v| !v.is_empty());
        match (&self.turn_secret_file, from_env) {
            (Some(_), Some(_)) => Err(format!(
                "give the TURN secret once: --turn-secret-file or {TURN_SECRET_ENV}, not both"
            )),
            (Some(path), None) => TurnSecret::from_file(path)
                .map(Some)
                .map_err(|e| format!("--turn-secret-file: {e}")),
            (None, Some(value)) => {
                let value = value
                    .into_string()
                    .map_err(|_| format!("{TURN_SECRET_ENV} is not valid UTF-8"))?;
                let secret = value.trim();
                if secret.is_empty() {
                    return Err(format!("{TURN_SECRET_ENV} holds only whitespace"));
                }
                Ok(Some(TurnSecret::new(secret)))
            }
            (None, None) => Ok(None),
        }
    }

    fn config(&self) -> Result<Config, String> {
        let config = Config {
            max_message_bytes: self.max_message_bytes,
            max_peers_per_room: self.max_peers_per_room,
            max_rooms: self.max_rooms,
            max_connections: self.max_connections,
            max_connections_per_ip: self.max_connections_per_ip,
            max_http_connections: self.max_http_connections,
            max_http_connections_per_ip: self.max_http_connections_per_ip,
            http_header_timeout: seconds("http-header-timeout", self.http_header_timeout)?,
            sample_size: self.sample_size,
            random_sample_share: self.random_sample_share,
            locality_v4_prefix: self.locality_v4_prefix,
            locality_v6_prefix: self.locality_v6_prefix,
            as_table: match &self.as_table {
                None => None,
                Some(path) => Some(std::sync::Arc::new(
                    AsTable::from_file(path).map_err(|e| format!("--as-table: {e}"))?,
                )),
            },
            client_ip_header: self.client_ip_header.clone(),
            rate_per_sec: self.rate,
            rate_burst: self.burst,
            idle_timeout: seconds("idle-timeout", self.idle_timeout)?,
            ping_interval: seconds("ping-interval", self.ping_interval)?,
            outbound_queue_bytes: self.outbound_queue_bytes,
            outbound_queue_bytes_per_sender: self.outbound_queue_bytes_per_sender,
            room_notice_rate: self.room_notice_rate,
            write_timeout: seconds("write-timeout", self.write_timeout)?,
            shutdown_grace: seconds("shutdown-grace", self.shutdown_grace)?,
            stun_urls: self.stun_urls.clone(),
            turn_urls: self.turn_urls.clone(),
            turn_secret: self.turn_secret()?,
            turn_credential_ttl: seconds("turn-ttl", self.turn_ttl)?,
            report_every: Duration::from_secs(self.report_every),
            p2p_min_peers: self.p2p_min_peers,
            redis: match &self.redis {
                None => None,
                Some(url) => Some(RedisConfig {
                    url: url.clone(),
                    key_prefix: self.redis_prefix.clone(),
                    peer_ttl: seconds("redis-peer-ttl", self.redis_peer_ttl)?,
                }),
            },
        };
        config.validate()?;
        Ok(config)
    }
}

/// Raises the soft open-file limit towards what `connections` sockets need.
#[cfg(unix)]
fn raise_fd_limit(connections: usize) {
    let want = libc::rlim_t::try_from(connections.saturating_add(256)).unwrap_or(libc::rlim_t::MAX);
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only read/write the struct we pass.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 || lim.rlim_cur >= want {
        return;
    }
    let before = lim.rlim_cur;
    lim.rlim_cur = want.min(lim.rlim_max);
    // SAFETY: as above.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) } == 0 {
        tracing::debug!(from = before, to = lim.rlim_cur, "raised open-file limit");
    } else {
        lim.rlim_cur = before;
    }
    if lim.rlim_cur < want {
        tracing::warn!(
            limit = lim.rlim_cur,
            max_connections = connections,
            "open-file limit is below what max_connections needs"
        );
    }
}

#[cfg(not(unix))]
fn raise_fd_limit(_connections: usize) {}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    let config = match args.config() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("ppspp-signal: {e}");
            return ExitCode::from(2);
        }
    };
    raise_fd_limit(
        config
            .max_connections
            .saturating_add(config.max_http_connections),
    );
    let listener = match tokio::net::TcpListener::bind(args.bind).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("ppspp-signal: cannot listen on {}: {e}", args.bind);
            return ExitCode::FAILURE;
        }
    };
    let addr = match listener.local_addr() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("ppspp-signal: {e}");
            return ExitCode::FAILURE;
        }
    };
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "ppspp-signal listening on ws://{addr}{WS_PATH}");
        let _ = out.flush();
    }
    let shutdown = async {
        let signal = ppspp_shutdown::shutdown_signal().await;
        tracing::info!("{signal} received");
    };
    match ppspp_signal::serve(listener, config, shutdown).await {
        Ok(()) => {
            tracing::info!("stopped");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("ppspp-signal: {e}");
            ExitCode::FAILURE
        }
    }
}
