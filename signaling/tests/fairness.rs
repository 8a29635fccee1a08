//! No sender can fill another peer's queue: a burst from several senders, each within its
//! own rate limit, reaches a peer that reads; one sender flooding a peer that does not read
//! is refused (`peer-busy`) instead of getting that peer removed.

mod common;

use std::time::Duration;

use common::{Client, Server, WAIT, swarm};
use futures_util::{SinkExt, StreamExt};
use ppspp_signal::Config;
use serde_json::{Value, json};
use tokio::time::timeout;
use tokio_tungstenite::tungstenite::Message;

/// Sends `n` signals to `to` in one write, without reading.
async fn burst(c: &mut Client, to: &str, n: usize, pad: &str) {
    for i in 0..n {
        let m = json!({"type": "signal", "to": to, "data": {"n": i, "pad": pad}});
        c.ws.feed(Message::text(m.to_string())).await.expect("feed");
    }
    timeout(WAIT, c.ws.flush())
        .await
        .expect("flush timed out")
        .expect("flush");
}

/// Signals itself and expects the `unknown-peer` answer as the next message: proof that
/// nothing else (an error, a `peer-left`) was sent to it before.
async fn expect_no_news(c: &mut Client) {
    let me = c.id().to_owned();
    c.signal(&me, json!(null)).await;
    let e = c.expect_error("unknown-peer").await;
    assert_eq!(e["to"], me.as_str(), "{e}");
}

/// Three room members each send 199 small signals (their whole burst after the join) to a
/// peer that reads as fast as it can: all arrive, in order per sender, and nobody is
/// disconnected. On one thread, as here, the senders' tasks handle whole bursts before the
/// reader's task writes anything: the worst case of a busy server.
#[tokio::test]
async fn a_burst_from_several_senders_reaches_a_reading_peer() {
    let server = Server::start(Config::default()).await;
    let room = swarm(21);
    let mut victim = server.client().await;
    victim.join(&room).await;
    let victim_id = victim.id().to_owned();
    let mut senders = Vec::new();
    for _ in 0..3 {
        let mut c = server.client().await;
        c.join(&room).await;
        senders.push(c);
    }
    let ids: Vec<String> = senders.iter().map(|c| c.id().to_owned()).collect();
    const EACH: usize = 199;
    let total = EACH * senders.len();
    let reader = tokio::spawn(async move {
        let mut next = [0u64; 3];
        let mut got = 0;
        while got < total {
            let m = victim.recv().await;
            assert_eq!(m["type"], "signal", "after {got} signals: {m}");
            let s = ids
                .iter()
                .position(|id| m["from"] == id.as_str())
                .expect("a sender");
            assert_eq!(m["data"]["n"], next[s], "out of order: {m}");
            next[s] += 1;
            got += 1;
        }
        victim
    });
    // A candidate-sized message (about 200 bytes).
    let pad = "c".repeat(150);
    futures_util::future::join_all(senders.iter_mut().map(|c| burst(c, &victim_id, EACH, &pad)))
        .await;
    let mut victim = timeout(Duration::from_secs(30), reader)
        .await
        .expect("the reader did not get every signal in time")
        .expect("reader");
    for c in senders.iter_mut() {
        expect_no_news(c).await;
    }
    expect_no_news(&mut victim).await;
    assert_eq!(server.health().await["peers"], 4);
    server.stop().await.expect("serve");
}

/// One sender floods a peer that reads nothing: the sender is told `peer-busy` (not fatal,
/// nothing delivered) and the peer stays, until its own writes time out: a reader that truly
/// does not read is still dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_sender_cannot_fill_a_peer_queue() {
    let server = Server::start(Config {
        rate_per_sec: 100_000.0,
        rate_burst: 100_000.0,
        write_timeout: Duration::from_secs(2),
        ..Config::default()
    })
    .await;
    let room = swarm(22);
    let mut sleeper = server.client().await;
    sleeper.join(&room).await;
    let sleeper_id = sleeper.id().to_owned();
    let mut flooder = server.client().await;
    flooder.join(&room).await;
    let (mut tx, mut rx) = flooder.ws.split();
    // The flooder reads on a task of its own and reports the first message it gets.
    let first = tokio::spawn(async move {
        loop {
            match rx.next().await {
                Some(Ok(Message::Text(t))) => {
                    return serde_json::from_str::<Value>(t.as_str()).expect("json");
                }
                Some(Ok(_)) => {}
                other => panic!("flooder connection ended: {other:?}"),
            }
        }
    });
    let blob = "z".repeat(15 * 1024);
    let mut first = std::pin::pin!(first);
    let mut answer = None;
    // The kernel's socket buffers take a few MB before the server queues anything.
    for _ in 0..4000 {
        let m = json!({"type": "signal", "to": sleeper_id, "data": blob});
        timeout(WAIT, tx.send(Message::text(m.to_string())))
            .await
            .expect("send timed out")
            .expect("send");
        if let Ok(r) = timeout(Duration::ZERO, &mut first).await {
            answer = Some(r.expect("reader"));
            break;
        }
    }
    let answer = match answer {
        Some(a) => a,
        None => timeout(WAIT, first)
            .await
            .expect("no answer to 4000 signals")
            .expect("reader"),
    };
    assert_eq!(answer["type"], "error", "{answer}");
    assert_eq!(answer["code"], "peer-busy", "{answer}");
    assert_eq!(answer["fatal"], false, "{answer}");
    assert_eq!(answer["to"], sleeper_id.as_str(), "{answer}");
    // The sleeper is still a member, so the room heard nothing.
    let h = server.health().await;
    assert_eq!(h["peers"], 2, "{h}");
    // ... until one of its writes has been stuck for write_timeout: then it is dropped. The
    // flooder keeps sending (each signal queued or refused) so that the server's writes do
    // block once the kernel's buffers are full, however much they took.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let m = json!({"type": "signal", "to": sleeper_id, "data": blob});
        timeout(WAIT, tx.send(Message::text(m.to_string())))
            .await
            .expect("send timed out")
            .expect("send");
        if server.health().await["peers"] == 1 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the sleeper was never dropped"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop(sleeper);
    server.stop().await.expect("serve");
}

/// A member on a slow link reads steadily at `rate` bytes/s while another floods it with
/// 15 KB signals at 45/s (within its rate limit; most are refused `peer-busy`) for `secs`:
/// the reader is still connected at the end and got signals all along. Returns how many.
async fn slow_reader_survives(rate: usize, secs: u64) -> usize {
    let server = Server::start(Config::default()).await;
    let room = swarm(23);
    let mut reader = server.client().await;
    reader.join(&room).await;
    let reader_id = reader.id().to_owned();
    let mut flooder = server.client().await;
    flooder.join(&room).await;
    let blob = "x".repeat(15_000);
    let end = tokio::time::Instant::now() + Duration::from_secs(secs);
    let flood = tokio::spawn(async move {
        while tokio::time::Instant::now() < end {
            let m = json!({"type": "signal", "to": reader_id, "data": blob});
            if flooder.ws.send(Message::text(m.to_string())).await.is_err() {
                break;
            }
            // Answers (peer-busy) are read so that the flooder's own link stays open.
            while let Ok(Some(_)) = timeout(Duration::from_millis(1), flooder.ws.next()).await {}
            tokio::time::sleep(Duration::from_millis(22)).await;
        }
        flooder
    });
    // Reading at `rate`: one message, then the time its bytes take at that rate.
    let mut got = 0;
    let mut last = tokio::time::Instant::now();
    while tokio::time::Instant::now() < end {
        match timeout(Duration::from_secs(12), reader.ws.next()).await {
            Ok(Some(Ok(Message::Text(t)))) => {
                got += 1;
                last = tokio::time::Instant::now();
                let pause = Duration::from_secs_f64(t.len() as f64 / rate as f64);
                tokio::time::sleep(pause).await;
            }
            Ok(Some(Ok(_))) => {}
            other => panic!(
                "the reader at {rate} B/s was dropped after {got} signals, {:?} after the last: {other:?}",
                last.elapsed()
            ),
        }
    }
    let flooder = flood.await.expect("flooder");
    // Both still members.
    let h = server.health().await;
    assert_eq!(h["peers"], 2, "at {rate} B/s, after {got} signals: {h}");
    drop((reader, flooder));
    server.stop().await.expect("serve");
    got
}

#[tokio::test]
async fn a_reader_on_a_50_kb_s_link_is_not_dropped_by_a_sender_within_its_limits() {
    let got = slow_reader_survives(50_000, 20).await;
    eprintln!("50 KB/s reader: {got} signals of 15 KB in 20 s");
    assert!(got >= 30, "{got} signals in 20 s at 50 KB/s");
}

#[tokio::test]
async fn a_reader_on_a_25_kb_s_link_is_not_dropped_by_a_sender_within_its_limits() {
    let got = slow_reader_survives(25_000, 20).await;
    eprintln!("25 KB/s reader: {got} signals of 15 KB in 20 s");
    assert!(got >= 15, "{got} signals in 20 s at 25 KB/s");
}
