//! Shutdown, in-process and of the binary.

mod common;

use std::time::Duration;

use common::{Binary, Client, Ending, Server, health, swarm};
use ppspp_signal::Config;
use serde_json::json;

/// Resolving the shutdown future closes every client with 1001 and `serve` returns.
#[tokio::test]
async fn graceful_shutdown_in_process() {
    let server = Server::start(Config::default()).await;
    let url = server.url();
    let addr = server.addr;
    let mut clients = Vec::new();
    for i in 0..5 {
        let mut c = server.client().await;
        if i < 4 {
            c.join(&swarm(i % 2)).await;
        }
        clients.push(c);
    }
    let stopping = tokio::spawn(server.stop());
    for c in clients.iter_mut() {
        assert_eq!(c.ending().await, Ending::Closed(1001));
    }
    tokio::time::timeout(Duration::from_secs(10), stopping)
        .await
        .expect("serve did not return")
        .expect("join")
        .expect("serve result");
    // Nothing listens any more.
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
    assert!(tokio_tungstenite::connect_async(url).await.is_err());
}

/// A config that does not validate makes `serve` fail at once.
#[tokio::test]
async fn serve_rejects_a_bad_config() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let bad = Config {
        ping_interval: Duration::from_secs(90),
        ..Config::default()
    };
    let r = tokio::time::timeout(
        Duration::from_secs(5),
        ppspp_signal::serve(listener, bad, std::future::pending()),
    )
    .await
    .expect("serve did not fail at once");
    assert_eq!(
        r.expect_err("bad config").kind(),
        std::io::ErrorKind::InvalidInput
    );
    let bad = Config {
        max_message_bytes: 0,
        ..Config::default()
    };
    let r = ppspp_signal::spawn("127.0.0.1:0".parse().expect("addr"), bad).await;
    assert_eq!(
        r.expect_err("bad config").kind(),
        std::io::ErrorKind::InvalidInput
    );
}

/// The binary prints its real address for `--bind 127.0.0.1:0`, serves health and
/// WebSocket clients, and on SIGTERM closes them and exits 0.
#[tokio::test]
async fn binary_health_and_sigterm() {
    let mut bin = Binary::start(&[]);
    assert_ne!(bin.addr.port(), 0, "{}", bin.banner);
    assert!(bin.addr.ip().is_loopback());
    let (status, h) = health(bin.addr).await;
    assert_eq!(status, 200);
    assert_eq!(h["status"], "ok");
    assert_eq!(h["v"], 1);
    assert_eq!(
        (h["rooms"].as_u64(), h["peers"].as_u64()),
        (Some(0), Some(0))
    );
    let mut a = Client::connect(&bin.url()).await;
    a.join(&swarm(1)).await;
    let mut b = Client::connect(&bin.url()).await;
    assert_eq!(b.join(&swarm(1)).await, vec![a.id().to_owned()]);
    b.signal(a.id(), json!({"sdp": "v=0"})).await;
    let from = b.id().to_owned();
    a.expect_signal(&from, &json!({"sdp": "v=0"})).await;
    let (_, h) = health(bin.addr).await;
    assert_eq!(h["connections"], 2);

    let exit = tokio::task::spawn_blocking(move || bin.terminate());
    assert_eq!(a.ending().await, Ending::Closed(1001));
    assert_eq!(b.ending().await, Ending::Closed(1001));
    let status = exit.await.expect("join");
    assert!(status.success(), "exit status {status}");
}

/// SIGINT (Ctrl-C) shuts down the same way.
#[tokio::test]
async fn binary_sigint() {
    let mut bin = Binary::start(&["--max-connections", "16"]);
    let mut a = Client::connect(&bin.url()).await;
    a.join(&swarm(3)).await;
    let exit = tokio::task::spawn_blocking(move || bin.signal(libc::SIGINT));
    assert_eq!(a.ending().await, Ending::Closed(1001));
    let status = exit.await.expect("join");
    assert!(status.success(), "exit status {status}");
}

/// Flags are validated: a bad value exits non-zero with a message.
#[test]
fn binary_rejects_bad_flags() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ppspp-signal"))
        .args(["--bind", "127.0.0.1:0", "--ping-interval", "100"])
        .output()
        .expect("run");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("ping_interval"), "{err}");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ppspp-signal"))
        .env("PPSPP_SIGNAL_MAX_ROOMS", "lots")
        .output()
        .expect("run");
    assert!(!out.status.success());
}
