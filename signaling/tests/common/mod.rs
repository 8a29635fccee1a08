//! Helpers shared by the integration tests: an in-process server, a WebSocket client that
//! speaks the protocol, and a raw HTTP GET for `/health` and `/metrics`. Every wait is bounded.

#![allow(dead_code)] // each test binary uses a different subset

pub mod redis_server;

use std::net::SocketAddr;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use ppspp_signal::Config;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// Longest any single expected event may take.
pub const WAIT: Duration = Duration::from_secs(5);

pub fn swarm(n: u32) -> String {
    format!("{n:040x}")
}

pub struct Server {
    pub addr: SocketAddr,
    running: ppspp_signal::Running,
}

impl Server {
    pub async fn start(config: Config) -> Server {
        let running = ppspp_signal::spawn("127.0.0.1:0".parse().expect("addr"), config)
            .await
            .expect("spawn server");
        Server {
            addr: running.addr(),
            running,
        }
    }

    pub fn url(&self) -> String {
        self.running.url()
    }

    pub async fn client(&self) -> Client {
        Client::connect(&self.url()).await
    }

    pub async fn health(&self) -> Value {
        health(self.addr).await.1
    }

    /// Polls `/health` until `pred` holds; panics after `WAIT`.
    pub async fn wait_health(&self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        wait_health_at(self.addr, what, pred).await
    }

    /// Polls `/health` until `pred` holds; panics after `limit`.
    pub async fn wait_health_for(
        &self,
        limit: Duration,
        what: &str,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        wait_health_within(self.addr, limit, what, pred).await
    }

    /// Resolves the shutdown future and waits (bounded) for `serve` to return.
    pub async fn stop(self) -> std::io::Result<()> {
        timeout(Duration::from_secs(10), self.running.shutdown())
            .await
            .expect("serve did not return after shutdown")
    }
}

/// A TCP connection to `addr` from the loopback address `from` (any of 127.0.0.0/8 works
/// on Linux), so tests can play several client addresses.
pub async fn connect_from(from: &str, addr: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.bind(SocketAddr::new(from.parse().expect("source ip"), 0))?;
    socket.connect(addr).await
}

/// `GET /health` over a fresh TCP connection: (status code, JSON body).
pub async fn health(addr: SocketAddr) -> (u16, Value) {
    health_from("127.0.0.1", addr).await
}

/// `GET /health` from the loopback address `from`.
pub async fn health_from(from: &str, addr: SocketAddr) -> (u16, Value) {
    let (status, body) = get_from(from, addr, "/health").await;
    (status, serde_json::from_str(&body).expect("health JSON"))
}

/// `GET path` over a fresh TCP connection from the loopback address `from`: (status code,
/// body).
pub async fn get_from(from: &str, addr: SocketAddr, path: &str) -> (u16, String) {
    let fut = async {
        let mut s = connect_from(from, addr).await.expect("connect");
        let head = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
        s.write_all(head.as_bytes()).await.expect("write");
        let mut buf = Vec::new();
        s.read_to_end(&mut buf).await.expect("read");
        let text = String::from_utf8(buf).expect("utf8");
        let status: u16 = text
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .expect("status");
        let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
        (status, body.to_owned())
    };
    timeout(WAIT, fut).await.expect("GET timed out")
}

/// `GET /metrics`: the scrape's text.
pub async fn metrics(addr: SocketAddr) -> String {
    let (status, body) = get_from("127.0.0.1", addr, "/metrics").await;
    assert_eq!(status, 200, "{body}");
    body
}

/// The value of the sample whose name and labels are `series` (e.g.
/// `ppspp_signal_joins_total{outcome="welcome"}`), if the scrape has it.
pub fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

pub struct Client {
    pub ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
    pub peer_id: Option<String>,
}

/// What reading a client's stream ended with.
#[derive(Debug, PartialEq)]
pub enum Ending {
    /// A close frame with this code.
    Closed(u16),
    /// The stream ended (or failed) without a close frame.
    Dropped,
}

impl Client {
    pub async fn connect(url: &str) -> Client {
        let (ws, _) = timeout(WAIT, tokio_tungstenite::connect_async(url))
            .await
            .expect("connect timed out")
            .expect("connect");
        Client { ws, peer_id: None }
    }

    /// Connects from the loopback address `from` (see [`connect_from`]).
    pub async fn connect_from(from: &str, addr: SocketAddr) -> Client {
        let fut = async {
            let tcp = connect_from(from, addr).await.expect("connect");
            let url = format!("ws://{addr}/ws");
            tokio_tungstenite::client_async(url, MaybeTlsStream::Plain(tcp))
                .await
                .expect("WebSocket handshake")
                .0
        };
        let ws = timeout(WAIT, fut).await.expect("connect timed out");
        Client { ws, peer_id: None }
    }

    /// Connects with the request header `name: value` (as a proxy in front would add).
    pub async fn connect_with_header(url: &str, name: &'static str, value: &str) -> Client {
        use tokio_tungstenite::tungstenite::client::IntoClientRequest;
        let mut request = url.into_client_request().expect("request");
        request
            .headers_mut()
            .insert(name, value.parse().expect("header value"));
        let (ws, _) = timeout(WAIT, tokio_tungstenite::connect_async(request))
            .await
            .expect("connect timed out")
            .expect("connect");
        Client { ws, peer_id: None }
    }

    pub async fn send(&mut self, v: Value) {
        self.send_text(v.to_string()).await;
    }

    pub async fn send_text(&mut self, s: String) {
        timeout(WAIT, self.ws.send(Message::text(s)))
            .await
            .expect("send timed out")
            .expect("send");
    }

    /// The next text message as JSON (pings and pongs are skipped). Panics on close or
    /// after `WAIT`.
    pub async fn recv(&mut self) -> Value {
        let fut = async {
            loop {
                match self.ws.next().await {
                    Some(Ok(Message::Text(t))) => {
                        return serde_json::from_str::<Value>(t.as_str()).expect("server JSON");
                    }
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
                    other => panic!("expected a text message, got {other:?}"),
                }
            }
        };
        timeout(WAIT, fut).await.expect("no message in time")
    }

    /// Reads for `d` and asserts no text message arrives (pings are answered meanwhile).
    pub async fn expect_nothing(&mut self, d: Duration) {
        match timeout(d, self.ws.next()).await {
            Err(_) => {}
            Ok(Some(Ok(Message::Ping(_) | Message::Pong(_)))) => {
                Box::pin(self.expect_nothing(d / 2)).await
            }
            Ok(other) => panic!("expected silence, got {other:?}"),
        }
    }

    /// Expects an error with `code`, and returns it.
    pub async fn expect_error(&mut self, code: &str) -> Value {
        let m = self.recv().await;
        assert_eq!(m["type"], "error", "expected error {code}, got {m}");
        assert_eq!(m["code"], code, "expected error {code}, got {m}");
        assert!(m["message"].as_str().is_some_and(|s| !s.is_empty()), "{m}");
        assert!(m["fatal"].is_boolean(), "{m}");
        m
    }

    /// Reads to the end of the stream, skipping text and pings, and says how it ended.
    pub async fn ending(&mut self) -> Ending {
        let fut = async {
            let code = loop {
                match self.ws.next().await {
                    Some(Ok(Message::Close(Some(f)))) => break u16::from(f.code),
                    Some(Ok(Message::Close(None))) => break 1005,
                    Some(Ok(_)) => {}
                    Some(Err(_)) | None => return Ending::Dropped,
                }
            };
            // Reading on sends our close reply and sees the server end the stream.
            while let Some(Ok(_)) = self.ws.next().await {}
            Ending::Closed(code)
        };
        timeout(WAIT, fut)
            .await
            .expect("connection did not end in time")
    }

    /// Expects error `code` and then a close frame with `close`.
    pub async fn expect_fatal(&mut self, code: &str, close: u16) {
        let m = self.expect_error(code).await;
        assert_eq!(m["fatal"], true, "{m}");
        assert_eq!(self.ending().await, Ending::Closed(close));
    }

    /// Joins `swarm`; returns the welcome's peer sample.
    pub async fn join(&mut self, swarm: &str) -> Vec<String> {
        self.send(json!({"type": "join", "v": 1, "swarm": swarm}))
            .await;
        let m = self.recv().await;
        assert_eq!(m["type"], "welcome", "{m}");
        assert_eq!(m["v"], 1);
        assert_eq!(m["swarm"], swarm);
        let id = m["peer_id"].as_str().expect("peer_id").to_owned();
        assert_eq!(id.len(), 32);
        assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
        self.peer_id = Some(id);
        m["peers"]
            .as_array()
            .expect("peers")
            .iter()
            .map(|p| p.as_str().expect("peer id").to_owned())
            .collect()
    }

    pub fn id(&self) -> &str {
        self.peer_id.as_deref().expect("joined")
    }

    pub async fn signal(&mut self, to: &str, data: Value) {
        self.send(json!({"type": "signal", "to": to, "data": data}))
            .await;
    }

    /// Expects a relayed signal from `from` carrying `data`.
    pub async fn expect_signal(&mut self, from: &str, data: &Value) {
        let m = self.recv().await;
        assert_eq!(m["type"], "signal", "{m}");
        assert_eq!(m["from"], from, "{m}");
        assert_eq!(&m["data"], data, "{m}");
    }

    pub async fn expect_peer_left(&mut self, peer: &str) {
        let m = self.recv().await;
        assert_eq!(m["type"], "peer-left", "{m}");
        assert_eq!(m["peer_id"], peer, "{m}");
    }

    pub async fn close(mut self) {
        let _ = timeout(WAIT, self.ws.close(None)).await;
        let _ = timeout(WAIT, async {
            while let Some(Ok(_)) = self.ws.next().await {}
        })
        .await;
    }
}

/// The `ppspp-signal` binary, run as a child process; killed if dropped while running.
pub struct Binary {
    pub child: std::process::Child,
    pub addr: SocketAddr,
    /// The line it printed on startup.
    pub banner: String,
    /// Its stderr lines so far, when started with `capture`.
    pub log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    /// Hears when the log thread reached the end of stderr (the child is gone).
    log_ended: Option<std::sync::mpsc::Receiver<()>>,
}

impl Binary {
    /// Starts the binary on an ephemeral loopback port with `args` added, and reads the
    /// address it prints.
    pub fn start(args: &[&str]) -> Binary {
        Binary::spawn(args, "warn", false)
    }

    /// As [`Binary::start`], with `RUST_LOG=rust_log`; its stderr lines are collected in
    /// [`Binary::log`] when `capture` (else they go to the test's stderr).
    pub fn spawn(args: &[&str], rust_log: &str, capture: bool) -> Binary {
        use std::io::BufRead;
        use std::process::{Command, Stdio};
        let mut child = Command::new(env!("CARGO_BIN_EXE_ppspp-signal"))
            .args(["--bind", "127.0.0.1:0"])
            .args(args)
            .env("RUST_LOG", rust_log)
            .stdout(Stdio::piped())
            .stderr(if capture {
                Stdio::piped()
            } else {
                Stdio::inherit()
            })
            .spawn()
            .expect("spawn ppspp-signal");
        let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let log_ended = child.stderr.take().map(|stderr| {
            let log = log.clone();
            let (ended, log_ended) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                for line in std::io::BufReader::new(stderr).lines() {
                    let Ok(line) = line else { break };
                    log.lock().expect("log").push(line);
                }
                let _ = ended.send(());
            });
            log_ended
        });
        let stdout = child.stdout.take().expect("stdout");
        // Read the banner on a thread so a silent binary cannot hang the test.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let mut r = std::io::BufReader::new(stdout);
            let _ = r.read_line(&mut line);
            let _ = tx.send(line);
            // Keep the pipe open (and drained) until the child exits.
            let mut sink = String::new();
            while r.read_line(&mut sink).is_ok_and(|n| n > 0) {
                sink.clear();
            }
        });
        let banner = match rx.recv_timeout(Duration::from_secs(10)) {
            Ok(l) => l.trim_end().to_owned(),
            Err(_) => {
                let _ = child.kill();
                panic!("ppspp-signal printed no address");
            }
        };
        let addr = banner
            .strip_prefix("ppspp-signal listening on ws://")
            .and_then(|rest| rest.strip_suffix("/ws"))
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("unexpected banner {banner:?}"));
        Binary {
            child,
            addr,
            banner,
            log,
            log_ended,
        }
    }

    pub fn url(&self) -> String {
        format!("ws://{}/ws", self.addr)
    }

    /// Resident memory of the child in bytes, from /proc/PID/statm.
    pub fn rss_bytes(&self) -> u64 {
        let statm = std::fs::read_to_string(format!("/proc/{}/statm", self.child.id()))
            .expect("read statm");
        let pages: u64 = statm
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .expect("statm resident");
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        pages * u64::try_from(page).expect("page size")
    }

    /// Sends SIGTERM and waits (bounded) for the exit status.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        self.signal(libc::SIGTERM)
    }

    /// Sends SIGTERM, waits (bounded) for the exit, and returns the exit status and every
    /// line the binary wrote to stderr: lines read while it runs can lag behind what it
    /// wrote, so a test of what the log holds (or never holds) reads it whole here.
    pub fn terminate_and_read_log(&mut self) -> (std::process::ExitStatus, Vec<String>) {
        let status = self.terminate();
        let ended = self
            .log_ended
            .as_ref()
            .expect("started without capture: no log")
            .recv_timeout(WAIT);
        assert!(ended.is_ok(), "the log did not end after the exit");
        let log = self.log.lock().expect("log").clone();
        (status, log)
    }

    /// Sends `sig` and waits (bounded) for the exit status.
    pub fn signal(&mut self, sig: libc::c_int) -> std::process::ExitStatus {
        let pid = libc::pid_t::try_from(self.child.id()).expect("pid");
        // SAFETY: signalling our own child process by its pid.
        assert_eq!(unsafe { libc::kill(pid, sig) }, 0, "kill");
        let deadline = std::time::Instant::now() + Duration::from_secs(15);
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "ppspp-signal did not exit after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Binary {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Raises this process's soft open-file limit to its hard limit (children inherit it).
pub fn raise_fd_limit() -> libc::rlim_t {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain calls on a struct we own.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim), 0);
        lim.rlim_cur = lim.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim), 0);
    }
    lim.rlim_cur
}

/// `health` polled until `pred` holds; panics after `WAIT`.
pub async fn wait_health_at(addr: SocketAddr, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
    wait_health_within(addr, WAIT, what, pred).await
}

/// `health` polled until `pred` holds; panics after `limit`.
pub async fn wait_health_within(
    addr: SocketAddr,
    limit: Duration,
    what: &str,
    pred: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let h = health(addr).await.1;
        if pred(&h) {
            return h;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "health never showed {what}: {h}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
