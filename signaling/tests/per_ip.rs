//! Per-address limits: one client address cannot take every HTTP slot (half-sent request
//! heads) or every WebSocket connection; other addresses, and `/health`, stay served.
//!
//! Linux routes all of 127.0.0.0/8 to loopback, so the tests play several client addresses
//! by binding 127.0.0.x before connecting.

mod common;

use std::time::Duration;

use common::{Client, Server, WAIT, connect_from, health_from, swarm};
use ppspp_signal::Config;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;

/// Whether the server closes `s` (EOF or reset) within `limit`.
async fn closed_within(s: &mut TcpStream, limit: Duration) -> bool {
    let mut buf = [0u8; 256];
    timeout(limit, async {
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await
    .is_ok()
}

/// 300 request heads left half-sent from one address (more than the 256 HTTP slots) leave
/// another address able to reach `/health` and to open a WebSocket, with default limits.
#[tokio::test]
async fn half_sent_heads_from_one_address_leave_room_for_others() {
    let server = Server::start(Config::default()).await;
    let mut held = Vec::new();
    for _ in 0..300 {
        let mut s = connect_from("127.0.0.3", server.addr)
            .await
            .expect("connect");
        // Ignored if the server already closed it.
        let _ = s
            .write_all(b"GET /health HTTP/1.1\r\nHost: localhost\r\n")
            .await;
        held.push(s);
    }
    // The server accepts in order, so these come after all 300.
    let (status, h) = health_from("127.0.0.2", server.addr).await;
    assert_eq!(status, 200, "{h}");
    let mut c = Client::connect_from("127.0.0.2", server.addr).await;
    c.join(&swarm(1)).await;
    // The flooding address itself gets no more: a new connection is closed at once, long
    // before the 10 s header timeout would close it.
    let mut more = connect_from("127.0.0.3", server.addr)
        .await
        .expect("connect");
    let _ = more.write_all(b"GET /health HTTP/1.1\r\n").await;
    assert!(
        closed_within(&mut more, Duration::from_secs(3)).await,
        "a connection beyond the per-address limit was kept"
    );
    drop(held);
    server.stop().await.expect("serve");
}
/// WebSocket connections per address are capped: the one beyond gets HTTP 503; another
/// address still connects; a slot freed is usable again.
#[tokio::test]
async fn websocket_connections_per_address() {
    let server = Server::start(Config {
        max_connections_per_ip: 3,
        ..Config::default()
    })
    .await;
    let mut mine = Vec::new();
    for _ in 0..3 {
        let mut c = Client::connect_from("127.0.0.4", server.addr).await;
        c.join(&swarm(2)).await;
        mine.push(c);
    }
    let tcp = connect_from("127.0.0.4", server.addr)
        .await
        .expect("connect");
    let refused = timeout(
        WAIT,
        tokio_tungstenite::client_async(format!("ws://{}/ws", server.addr), tcp),
    )
    .await
    .expect("handshake timed out");
    match refused {
        Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => {
            assert_eq!(resp.status().as_u16(), 503);
            let body = String::from_utf8_lossy(resp.body().as_deref().unwrap_or_default());
            assert!(body.contains("this address"), "{body}");
        }
        other => panic!("expected HTTP 503, got {:?}", other.map(|_| ())),
    }
    let mut other = Client::connect_from("127.0.0.5", server.addr).await;
    other.join(&swarm(2)).await;
    mine.pop().expect("client").close().await;
    server
        .wait_health("a slot freed", |h| h["connections"] == 3)
        .await;
    let mut again = Client::connect_from("127.0.0.4", server.addr).await;
    again.join(&swarm(2)).await;
    server.stop().await.expect("serve");
}

/// Pending HTTP connections per address are capped by their own limit.
#[tokio::test]
async fn pending_http_connections_per_address() {
    let server = Server::start(Config {
        max_http_connections_per_ip: 2,
        ..Config::default()
    })
    .await;
    let a = connect_from("127.0.0.6", server.addr)
        .await
        .expect("connect");
    let b = connect_from("127.0.0.6", server.addr)
        .await
        .expect("connect");
    let mut c = connect_from("127.0.0.6", server.addr)
        .await
        .expect("connect");
    assert!(closed_within(&mut c, Duration::from_secs(3)).await);
    // Other addresses are not affected; a freed slot is usable again.
    assert_eq!(health_from("127.0.0.7", server.addr).await.0, 200);
    drop((a, b));
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let mut s = connect_from("127.0.0.6", server.addr)
            .await
            .expect("connect");
        s.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .expect("write");
        let mut out = Vec::new();
        let _ = timeout(WAIT, s.read_to_end(&mut out)).await;
        if out.starts_with(b"HTTP/1.1 200") {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the address never got a slot back"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.stop().await.expect("serve");
}

/// Half-sent heads from nine addresses, 32 each (each within its per-address limit, 288 in
/// all against 256 slots): once they have been held a second, `/health` and a WebSocket
/// from a tenth address are served at once, since the oldest held connection is closed
/// for each newcomer; before, both were refused for the 10 s header timeout.
#[tokio::test]
async fn half_sent_heads_from_several_addresses_leave_room_for_others() {
    let server = Server::start(Config::default()).await;
    let mut held = Vec::new();
    for a in 10..19 {
        for _ in 0..32 {
            let mut s = connect_from(&format!("127.0.0.{a}"), server.addr)
                .await
                .expect("connect");
            let _ = s
                .write_all(b"GET /health HTTP/1.1\r\nHost: localhost\r\n")
                .await;
            held.push(s);
        }
    }
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    let started = tokio::time::Instant::now();
    let (status, h) = health_from("127.0.0.20", server.addr).await;
    assert_eq!(status, 200, "{h}");
    let mut c = Client::connect_from("127.0.0.20", server.addr).await;
    c.join(&swarm(9)).await;
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "served after {:?}",
        started.elapsed()
    );
    drop(held);
    server.stop().await.expect("serve");
}
