//! Misbehaving clients get a clear error and are closed; well-behaved clients in the same
//! room never notice.

mod common;

use std::time::Duration;

use common::{Client, Ending, Server, WAIT, swarm};
use futures_util::SinkExt;
use ppspp_signal::Config;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

/// A good pair (`a`, `b`) that checks it still works after each bad client.
struct Pair {
    a: Client,
    b: Client,
    n: u64,
}

impl Pair {
    async fn new(server: &Server, room: &str) -> Pair {
        let mut a = server.client().await;
        a.join(room).await;
        let mut b = server.client().await;
        b.join(room).await;
        Pair { a, b, n: 0 }
    }

    /// Both hear that `bad` left, then a round trip of signals works.
    async fn check(&mut self, bad: &str) {
        self.a.expect_peer_left(bad).await;
        self.b.expect_peer_left(bad).await;
        self.n += 1;
        let data = json!({"candidate": self.n});
        let (a_id, b_id) = (self.a.id().to_owned(), self.b.id().to_owned());
        self.a.signal(&b_id, data.clone()).await;
        self.b.expect_signal(&a_id, &data).await;
        self.b.signal(&a_id, data.clone()).await;
        self.a.expect_signal(&b_id, &data).await;
    }
}

async fn bad_client(server: &Server, room: &str) -> (Client, String) {
    let mut c = server.client().await;
    c.join(room).await;
    let id = c.id().to_owned();
    (c, id)
}

#[tokio::test]
async fn malformed_input_is_fatal_for_the_sender_only() {
    let max = 16 * 1024;
    let server = Server::start(Config {
        max_message_bytes: max,
        ..Config::default()
    })
    .await;
    let room = swarm(9);
    let mut pair = Pair::new(&server, &room).await;

    let cases: Vec<(Message, &str, u16)> = vec![
        (Message::text("{not json"), "bad-json", 1008),
        (Message::text("[1,2]"), "bad-message", 1008),
        (Message::text(r#"{"to":"x"}"#), "bad-message", 1008),
        (
            Message::text(r#"{"type":"signal","data":1}"#),
            "bad-message",
            1008,
        ),
        (
            Message::text(r#"{"type":"signal","to":"x"}"#),
            "bad-message",
            1008,
        ),
        (Message::text(r#"{"type":"hello"}"#), "unknown-type", 1008),
        (Message::binary(vec![1u8, 2, 3]), "binary-frame", 1003),
        // Just over the limit, and far over the WebSocket layer's own limit.
        (
            Message::text(json!({"type":"signal","to":"x","data":"a".repeat(max)}).to_string()),
            "too-large",
            1009,
        ),
        (Message::text("b".repeat(max * 8)), "too-large", 1009),
    ];
    for (frame, code, close) in cases {
        let (mut bad, bad_id) = bad_client(&server, &room).await;
        pair.a.expect_nothing(Duration::from_millis(10)).await;
        tokio::time::timeout(WAIT, bad.ws.send(frame))
            .await
            .expect("send timed out")
            .expect("send");
        bad.expect_fatal(code, close).await;
        pair.check(&bad_id).await;
    }
    // A frame exactly at the limit is fine.
    let data = Value::String(String::new());
    let frame = json!({"type": "signal", "to": pair.b.id(), "data": data}).to_string();
    let pad = "x".repeat(max - frame.len());
    let frame = json!({"type": "signal", "to": pair.b.id(), "data": pad}).to_string();
    assert_eq!(frame.len(), max);
    pair.a.send_text(frame).await;
    let from = pair.a.id().to_owned();
    pair.b.expect_signal(&from, &Value::String(pad)).await;
    let h = server.health().await;
    assert_eq!(
        (h["peers"].as_u64(), h["connections"].as_u64()),
        (Some(2), Some(2))
    );
    server.stop().await.expect("serve");
}

#[tokio::test]
async fn flooding_is_rate_limited() {
    let server = Server::start(Config {
        rate_per_sec: 100.0,
        rate_burst: 50.0,
        ..Config::default()
    })
    .await;
    let room = swarm(10);
    let mut pair = Pair::new(&server, &room).await;
    let (mut flood, flood_id) = bad_client(&server, &room).await;
    // 1 token went on the join; 49 more pass, the 51st message is refused. Send them all
    // at once, without reading.
    let stranger = "f".repeat(32);
    for _ in 0..60 {
        let m = json!({"type": "signal", "to": stranger, "data": 0}).to_string();
        if flood.ws.feed(Message::text(m)).await.is_err() {
            break;
        }
    }
    let _ = flood.ws.flush().await;
    let mut unknown = 0;
    loop {
        let m = flood.recv().await;
        match m["code"].as_str() {
            Some("unknown-peer") => unknown += 1,
            Some("rate-limited") => break,
            _ => panic!("unexpected {m}"),
        }
    }
    // Allow some refill while the frames were in flight; the limit must still bite.
    assert!(
        (49..60).contains(&unknown),
        "{unknown} messages before the limit"
    );
    assert_eq!(flood.ending().await, Ending::Closed(1008));
    pair.check(&flood_id).await;

    // A client at a steady rate under the limit is never cut off.
    let (mut steady, _) = bad_client(&server, &room).await;
    let b_id = pair.b.id().to_owned();
    let s_id = steady.id().to_owned();
    for i in 0..80 {
        steady.signal(&b_id, json!(i)).await;
        pair.b.expect_signal(&s_id, &json!(i)).await;
        tokio::time::sleep(Duration::from_millis(15)).await;
    }
    steady.signal(&b_id, json!("last")).await;
    pair.b.expect_signal(&s_id, &json!("last")).await;
    server.stop().await.expect("serve");
}

/// A client that sends nothing, not even pongs, is closed after the idle timeout; one that
/// answers pings stays.
#[tokio::test]
async fn idle_clients_are_closed() {
    let server = Server::start(Config {
        idle_timeout: Duration::from_millis(800),
        ping_interval: Duration::from_millis(200),
        ..Config::default()
    })
    .await;
    let room = swarm(11);
    let mut live = server.client().await;
    live.join(&room).await;
    let mut silent = server.client().await;
    silent.join(&room).await;
    let silent_id = silent.id().to_owned();
    // `live` reads (and so answers pings) throughout; `silent` reads nothing for 1.5 s.
    live.expect_peer_left(&silent_id).await;
    live.expect_nothing(Duration::from_millis(700)).await;
    let m = silent.recv().await;
    assert_eq!(m["code"], "idle-timeout", "{m}");
    assert_eq!(silent.ending().await, Ending::Closed(1000));
    // `live` outlived several idle timeouts and still works.
    server
        .wait_health("only live", |h| h["peers"] == 1 && h["connections"] == 1)
        .await;
    let mut other = server.client().await;
    assert_eq!(other.join(&room).await, vec![live.id().to_owned()]);
    server.stop().await.expect("serve");
}

/// A client that reads nothing while others keep sending to it is disconnected once a write
/// to it has been stuck for the write timeout, and its room hears it left. Meanwhile the
/// sender is told `peer-busy` when the reader's queue is full.
#[tokio::test]
async fn slow_reader_is_disconnected() {
    let server = Server::start(Config {
        rate_per_sec: 10_000.0,
        rate_burst: 10_000.0,
        write_timeout: Duration::from_secs(1),
        ..Config::default()
    })
    .await;
    let room = swarm(12);
    let mut fast = server.client().await;
    fast.join(&room).await;
    let mut slow = server.client().await;
    slow.join(&room).await;
    let slow_id = slow.id().to_owned();
    // 12 KiB a message; the kernel's socket buffers take a few MB before the server's
    // writes block and the queue fills.
    let blob = "z".repeat(12 * 1024);
    let mut busy = 0;
    let mut left = None;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    'send: while tokio::time::Instant::now() < deadline {
        fast.signal(&slow_id, json!(blob)).await;
        // Once the queue is full, wait for answers rather than send more.
        let wait = Duration::from_millis(if busy > 0 { 200 } else { 1 });
        while let Ok(Some(Ok(Message::Text(t)))) =
            tokio::time::timeout(wait, futures_util::StreamExt::next(&mut fast.ws)).await
        {
            let m: Value = serde_json::from_str(t.as_str()).expect("json");
            match (m["type"].as_str(), m["code"].as_str()) {
                (Some("error"), Some("peer-busy")) => {
                    assert_eq!(m["fatal"], false, "{m}");
                    busy += 1;
                }
                // A signal sent while the server was dropping the slow reader can be
                // answered "no such peer" just before the room hears it left.
                (Some("error"), Some("unknown-peer")) => {}
                (Some("peer-left"), _) => {
                    left = Some(m);
                    break 'send;
                }
                _ => panic!("unexpected {m}"),
            }
        }
    }
    let left = left.unwrap_or_else(|| panic!("slow reader never disconnected ({busy} busy)"));
    assert_eq!(left["peer_id"], slow_id.as_str());
    assert!(busy > 0, "the sender was never told the queue was full");
    server
        .wait_health("slow reader gone", |h| {
            h["peers"] == 1 && h["connections"] == 1
        })
        .await;
    drop(slow);
    server.stop().await.expect("serve");
}
