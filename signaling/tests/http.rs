//! HTTP-level bounds: connections that never upgrade are limited in number and time, and
//! WebSocket connections do not count against that limit.

mod common;

use std::time::Duration;

use common::{Server, WAIT, health, swarm};
use ppspp_signal::Config;
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio::time::{Instant, timeout};

/// Reads until EOF or error; returns how long that took. Panics after `WAIT`.
async fn time_to_close(s: &mut TcpStream) -> Duration {
    let t = Instant::now();
    let mut buf = [0u8; 256];
    timeout(WAIT, async {
        while let Ok(n) = s.read(&mut buf).await {
            if n == 0 {
                break;
            }
        }
    })
    .await
    .expect("connection was not closed");
    t.elapsed()
}

#[tokio::test]
async fn silent_http_connections_time_out() {
    let server = Server::start(Config {
        http_header_timeout: Duration::from_millis(300),
        ..Config::default()
    })
    .await;
    let mut silent = TcpStream::connect(server.addr).await.expect("connect");
    let took = time_to_close(&mut silent).await;
    assert!(took >= Duration::from_millis(250), "closed after {took:?}");
    // A WebSocket connection is not subject to it once upgraded.
    let mut c = server.client().await;
    c.join(&swarm(1)).await;
    c.expect_nothing(Duration::from_millis(600)).await;
    assert_eq!(server.health().await["peers"], 1);
    server.stop().await.expect("serve");
}

#[tokio::test]
async fn http_connection_limit() {
    let server = Server::start(Config {
        max_http_connections: 4,
        ..Config::default()
    })
    .await;
    // Upgraded connections do not count.
    let mut clients = Vec::new();
    for _ in 0..6 {
        let mut c = server.client().await;
        c.join(&swarm(2)).await;
        clients.push(c);
    }
    // Four idle HTTP connections fill the limit; the fifth is closed at once.
    let mut idle = Vec::new();
    for _ in 0..4 {
        idle.push(TcpStream::connect(server.addr).await.expect("connect"));
    }
    // Let the server accept the four before the fifth arrives.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut fifth = TcpStream::connect(server.addr).await.expect("connect");
    let took = time_to_close(&mut fifth).await;
    assert!(took < Duration::from_secs(1), "closed after {took:?}");
    drop(idle);
    let h = server
        .wait_health("health served again", |h| h["connections"] == 6)
        .await;
    assert_eq!(h["peers"], 6);
    let (status, _) = health(server.addr).await;
    assert_eq!(status, 200);
    server.stop().await.expect("serve");
}
