//! Departures cost the server in proportion to what the leaver did, not to the size of its
//! room: join/leave cycling in a big room is not amplified into a room-wide broadcast per
//! leave, a peer still hears that a peer it talked to left, and a big room closing at once
//! neither floods the log nor stalls `/health`.
//!
//! Clients connect from several loopback addresses (all of 127.0.0.0/8 is loopback on
//! Linux) to stay within the per-address limits.

mod common;

use std::time::{Duration, Instant};

use common::{Binary, Client, WAIT, health_from, raise_fd_limit};
use futures_util::future::join_all;
use serde_json::json;
use tokio::task::JoinHandle;
use tokio::time::timeout;

const MEMBERS: usize = 300;
const CYCLERS: usize = 10;
/// Join/leave cycles per cycler: 180 messages, within the default burst of 200.
const CYCLES: usize = 90;

fn room() -> String {
    "5".repeat(40)
}

/// Member `i`'s address: 50 members per address.
fn member_ip(i: usize) -> String {
    format!("127.0.4.{}", i / 50 + 1)
}

/// What a member read until the flush signal.
struct Heard {
    /// `peer-left` notices, by peer id.
    left: Vec<String>,
}

/// Reads until a signal with data "flush"; panics on anything but signals and `peer-left`.
fn listen(mut c: Client) -> JoinHandle<(Client, Heard)> {
    tokio::spawn(async move {
        let mut heard = Heard { left: Vec::new() };
        loop {
            let m = timeout(Duration::from_secs(60), c.recv())
                .await
                .expect("no flush in 60 s");
            match m["type"].as_str() {
                Some("peer-left") => heard
                    .left
                    .push(m["peer_id"].as_str().expect("id").to_owned()),
                Some("signal") if m["data"] == "flush" => return (c, heard),
                Some("signal") => {}
                _ => panic!("unexpected {m}"),
            }
        }
    })
}

async fn next_not_peer_left(c: &mut Client) -> serde_json::Value {
    loop {
        let m = c.recv().await;
        if m["type"] != "peer-left" {
            return m;
        }
    }
}

/// `MEMBERS` clients join the room, 25 at a time (within the per-address limit of pending
/// handshakes); with `offer`, each then signals the peers of its welcome sample, as real
/// clients offer to them.
async fn join_members(server: &Binary, offer: bool) -> Vec<Client> {
    let mut members = Vec::new();
    for first in (0..MEMBERS).step_by(25) {
        members.extend(
            join_all((first..first + 25).map(|i| async move {
                let mut c = Client::connect_from(&member_ip(i), server.addr).await;
                let sample = c.join(&room()).await;
                if offer {
                    for p in &sample {
                        c.signal(p, json!({"kind": "offer", "sdp": "v=0"})).await;
                    }
                }
                c
            }))
            .await,
        );
    }
    members
}

/// Ten clients join and leave a room of 300 again and again, within their rate limits. The
/// room's members, who never heard of them, must not each get a notice per leave; a member
/// that a leaver did talk to still hears it left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn join_leave_cycling_is_not_amplified() {
    raise_fd_limit();
    let server = Binary::start(&[]);
    let members = join_members(&server, false).await;
    let ids: Vec<String> = members.iter().map(|c| c.id().to_owned()).collect();
    let listeners: Vec<_> = members.into_iter().map(listen).collect();

    let cycled = join_all((0..CYCLERS).map(|n| {
        let addr = server.addr;
        async move {
            let mut c = Client::connect_from(&format!("127.0.5.{}", n + 1), addr).await;
            let mut seen = Vec::new();
            for _ in 0..CYCLES {
                c.send(json!({"type": "join", "v": 1, "swarm": room()}))
                    .await;
                // Between its join and its leave a cycler is a member too: it may be told
                // of other cyclers leaving.
                let m = next_not_peer_left(&mut c).await;
                assert_eq!(m["type"], "welcome", "{m}");
                seen.push(m["peer_id"].as_str().expect("id").to_owned());
                c.send(json!({"type": "leave"})).await;
            }
            // Answered only once the last leave has been handled.
            c.send(json!({"type": "leave"})).await;
            let m = next_not_peer_left(&mut c).await;
            assert_eq!(m["code"], "not-joined", "{m}");
            seen
        }
    }));
    let cycler_ids: Vec<String> = timeout(Duration::from_secs(120), cycled)
        .await
        .expect("cycling took over 120 s")
        .concat();

    // A peer that signals member 0 and leaves: member 0 must hear it.
    let mut talker = Client::connect_from("127.0.5.100", server.addr).await;
    talker.join(&room()).await;
    let talker_id = talker.id().to_owned();
    talker.signal(&ids[0], json!({"kind": "offer"})).await;
    talker.send(json!({"type": "leave"})).await;
    talker.send(json!({"type": "leave"})).await;
    talker.expect_error("not-joined").await;

    // Two flushers (150 signals each, within the burst) mark the end of every member's
    // queue: whatever was queued for a member before is read before the flush.
    for (n, chunk) in ids.chunks(MEMBERS / 2).enumerate() {
        let mut f = Client::connect_from(&format!("127.0.6.{}", n + 1), server.addr).await;
        f.join(&room()).await;
        for id in chunk {
            f.signal(id, json!("flush")).await;
        }
    }
    let heard: Vec<(Client, Heard)> = timeout(Duration::from_secs(120), join_all(listeners))
        .await
        .expect("members did not all get the flush")
        .into_iter()
        .map(|r| r.expect("listener"))
        .collect();
    let about_cyclers: usize = heard
        .iter()
        .map(|(_, h)| h.left.iter().filter(|id| cycler_ids.contains(id)).count())
        .sum();
    let leaves = CYCLERS * CYCLES;
    eprintln!(
        "{leaves} leaves in a room of {MEMBERS}: {about_cyclers} notices to members \
         (a broadcast per leave would be {})",
        leaves * MEMBERS
    );
    assert!(
        about_cyclers <= leaves * MEMBERS / 20,
        "{about_cyclers} peer-left notices for {leaves} leaves of peers nobody talked to"
    );
    assert!(
        heard[0].1.left.contains(&talker_id),
        "member 0 was not told that the peer that signalled it left"
    );
    drop(heard);
    drop(server);
}

/// A room of 300 in which each newcomer signalled the peers of its welcome sample (as real
/// clients offer to them) closes at once: the log gets a bounded number of lines (not one
/// per pair of peers) and `/health` answers throughout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_big_room_closing_at_once() {
    raise_fd_limit();
    let mut server = Binary::spawn(&[], "info", true);
    let members = join_members(&server, true).await;
    // Everyone reads what they are sent until their connection goes.
    let readers: Vec<JoinHandle<()>> = members
        .into_iter()
        .map(|mut c| {
            tokio::spawn(async move {
                while let Some(Ok(_)) = futures_util::StreamExt::next(&mut c.ws).await {}
            })
        })
        .collect();
    let h = health_from("127.0.0.9", server.addr).await.1;
    assert_eq!(h["peers"], MEMBERS, "{h}");
    let lines_before = server.log.lock().expect("log").len();

    // All close at once (the tasks are aborted, dropping their sockets); `/health` is
    // polled meanwhile and must keep answering promptly.
    let started = Instant::now();
    for r in &readers {
        r.abort();
    }
    let mut slowest = Duration::ZERO;
    loop {
        let t = Instant::now();
        let (status, h) = timeout(WAIT, health_from("127.0.0.9", server.addr))
            .await
            .expect("health stalled");
        slowest = slowest.max(t.elapsed());
        assert_eq!(status, 200);
        if h["peers"] == 0 && h["connections"] == 0 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the room did not empty: {h}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (status, log) = server.terminate_and_read_log();
    assert!(status.success(), "exit status {status}");
    let lines = log.len() - lines_before;
    eprintln!(
        "room of {MEMBERS} closed in {:?}: {lines} log lines, slowest health {slowest:?}",
        started.elapsed()
    );
    assert!(
        lines <= MEMBERS / 10,
        "{lines} log lines for a room of {MEMBERS} closing"
    );
    assert!(
        slowest < Duration::from_secs(2),
        "health took {slowest:?} during the close"
    );
}
