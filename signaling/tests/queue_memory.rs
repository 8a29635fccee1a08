//! What is queued for clients that never read is bounded in bytes, whatever the size of the
//! messages sent to them, and the memory is released when they go.
//!
//! The server runs as the real binary so its resident memory (/proc/PID/statm) is measured
//! apart from the test's clients. Victims, senders and the sink connect from different
//! loopback addresses (all of 127.0.0.0/8 is loopback on Linux) to stay within the
//! per-address limits.

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use common::{Binary, Client, WAIT, wait_health_at};
use futures_util::future::join_all;
use futures_util::{SinkExt, StreamExt};
use serde_json::json;
use tokio::time::timeout;
use tokio_tungstenite::tungstenite::Message;

const VICTIMS: usize = 10;
const SENDERS: usize = 8;
/// Signals of about 15 KiB each sender sends each victim per round: 6 MB per victim.
const PER_VICTIM: usize = 50;
const ROUNDS: usize = 3;
/// Growth of the server's resident memory allowed over its baseline, at the peak of a
/// round and after all rounds.
const GROWTH_BOUND: u64 = 12 << 20;

fn room() -> String {
    "7".repeat(40)
}

/// A client that reads nothing, with a small receive buffer so the kernel holds little of
/// what the server sends it.
async fn victim(addr: SocketAddr, n: usize) -> Client {
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket.set_recv_buffer_size(4096).expect("rcvbuf");
    let from: std::net::IpAddr = format!("127.0.1.{}", n + 1).parse().expect("ip");
    socket.bind(SocketAddr::new(from, 0)).expect("bind");
    let tcp = socket.connect(addr).await.expect("connect");
    let (ws, _) = tokio_tungstenite::client_async(
        format!("ws://{addr}/ws"),
        tokio_tungstenite::MaybeTlsStream::Plain(tcp),
    )
    .await
    .expect("handshake");
    let mut c = Client { ws, peer_id: None };
    c.join(&room()).await;
    c
}

async fn round(server: &Binary, sink: &mut Client) -> u64 {
    let victims = join_all((0..VICTIMS).map(|n| victim(server.addr, n))).await;
    let ids: Vec<String> = victims.iter().map(|c| c.id().to_owned()).collect();
    let sink_id = sink.id().to_owned();
    let blob = "q".repeat(15 * 1024);
    let senders = join_all((0..SENDERS).map(|n| {
        let (ids, sink_id, blob) = (ids.clone(), sink_id.clone(), blob.clone());
        async move {
            let mut c = Client::connect_from(&format!("127.0.2.{}", n + 1), server.addr).await;
            c.join(&room()).await;
            let (mut tx, mut rx) = c.ws.split();
            // Whatever the server answers (errors, peer-left) is read and dropped, so the
            // sender's own socket never blocks the server.
            let drain = tokio::spawn(async move { while let Some(Ok(_)) = rx.next().await {} });
            for i in 0..PER_VICTIM {
                for to in &ids {
                    let m = json!({"type": "signal", "to": to, "data": {"i": i, "b": blob}});
                    tx.feed(Message::text(m.to_string())).await.expect("feed");
                }
                tx.flush().await.expect("flush");
            }
            // Frames are handled in order: once the sink has this, the server has handled
            // every signal above.
            let m = json!({"type": "signal", "to": sink_id, "data": "done"});
            tx.send(Message::text(m.to_string())).await.expect("send");
            (tx, drain)
        }
    }));
    let senders = timeout(Duration::from_secs(120), senders)
        .await
        .expect("senders took over 120 s");
    let mut markers = 0;
    while markers < SENDERS {
        let m = timeout(Duration::from_secs(60), sink.recv())
            .await
            .expect("sink got no marker");
        // The sink is a member too: it may hear of earlier rounds' clients leaving.
        if m["type"] == "signal" {
            assert_eq!(m["data"], "done", "{m}");
            markers += 1;
        }
    }
    let peak = server.rss_bytes();
    let h = common::health(server.addr).await.1;
    eprintln!("peak: RSS {} KiB, health {h}", peak / 1024);
    drop(victims);
    for (mut tx, drain) in senders {
        let _ = tx.close().await;
        drain.abort();
    }
    wait_health_at(server.addr, "round's clients gone", |h| {
        h["connections"] == 1
    })
    .await;
    if let Some(q) = h["queued_bytes"].as_u64() {
        let budget = ppspp_signal::Config::default().outbound_queue_bytes as u64;
        assert!(
            q <= VICTIMS as u64 * budget,
            "{q} bytes queued for {VICTIMS} clients (budget {budget} each)"
        );
    }
    peak
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queues_of_clients_that_never_read_are_bounded_in_bytes() {
    timeout(Duration::from_secs(300), run())
        .await
        .expect("queue memory test took over 300 s");
}

async fn run() {
    // Rates high enough that the flood is limited by the queues, not the token buckets;
    // a write timeout long enough that the victims are still there at the peak.
    let mut server = Binary::start(&[
        "--rate",
        "100000",
        "--burst",
        "100000",
        "--write-timeout",
        "120",
    ]);
    let mut sink = Client::connect_from("127.0.3.1", server.addr).await;
    sink.join(&room()).await;
    // Warm up: runtime threads, allocator arenas, maps.
    let url = server.url();
    for c in join_all((0..20).map(|_| Client::connect(&url))).await {
        c.close().await;
    }
    wait_health_at(server.addr, "warm-up gone", |h| h["connections"] == 1).await;
    let before = server.rss_bytes();
    for r in 0..ROUNDS {
        let peak = round(&server, &mut sink).await;
        let growth = peak.saturating_sub(before);
        eprintln!(
            "round {r}: RSS {} KiB -> {} KiB at the peak",
            before / 1024,
            peak / 1024
        );
        assert!(
            growth < GROWTH_BOUND,
            "round {r}: RSS grew {} KiB with {VICTIMS} clients that never read",
            growth / 1024
        );
    }
    let h = wait_health_at(server.addr, "queues empty", |h| h["peers"] == 1).await;
    let after = server.rss_bytes();
    eprintln!(
        "after {ROUNDS} rounds: RSS {} KiB (baseline {} KiB), health {h}",
        after / 1024,
        before / 1024
    );
    assert!(
        after.saturating_sub(before) < GROWTH_BOUND,
        "RSS {} KiB after the clients left (baseline {} KiB)",
        after / 1024,
        before / 1024
    );
    let _ = timeout(WAIT, sink.close()).await;
    let status = server.terminate();
    assert!(status.success(), "exit status {status}");
}
