//! Rooms, samples, relaying, leaves, versions and limits.

mod common;

use std::collections::HashSet;
use std::time::Duration;

use common::{Client, Ending, Server, swarm};
use ppspp_signal::Config;
use serde_json::json;

/// 50 clients over 3 rooms: bounded same-room samples, delivery with the right `from`,
/// nothing across rooms, `unknown-peer` for other rooms and strangers, leaves announced
/// only to the room.
#[tokio::test]
async fn many_clients_three_rooms() {
    let sample_size = 7;
    let server = Server::start(Config {
        sample_size,
        ..Config::default()
    })
    .await;
    let rooms = [swarm(1), swarm(2), "ab".repeat(32)];
    let mut clients: Vec<(usize, Client)> = Vec::new();
    for i in 0..50 {
        let room = i % 3;
        let mut c = server.client().await;
        let sample = c.join(&rooms[room]).await;
        let before: HashSet<&str> = clients
            .iter()
            .filter(|(r, _)| *r == room)
            .map(|(_, c)| c.id())
            .collect();
        assert_eq!(sample.len(), before.len().min(sample_size), "sample size");
        let distinct: HashSet<&str> = sample.iter().map(String::as_str).collect();
        assert_eq!(distinct.len(), sample.len(), "sample has duplicates");
        assert!(
            distinct.is_subset(&before),
            "sample holds a peer not in the room"
        );
        clients.push((room, c));
    }
    let h = server.health().await;
    assert_eq!(
        (h["rooms"].as_u64(), h["peers"].as_u64()),
        (Some(3), Some(50))
    );
    assert_eq!(h["connections"], 50);

    // Every client signals the next client of its room, which receives it from the right
    // sender.
    for room in 0..3 {
        let idx: Vec<usize> = (0..clients.len())
            .filter(|&i| clients[i].0 == room)
            .collect();
        for w in 0..idx.len() {
            let (a, b) = (idx[w], idx[(w + 1) % idx.len()]);
            let to = clients[b].1.id().to_owned();
            let from = clients[a].1.id().to_owned();
            let data = json!({"sdp": format!("offer {a}->{b}"), "n": a});
            clients[a].1.signal(&to, data.clone()).await;
            clients[b].1.expect_signal(&from, &data).await;
        }
    }

    // Across rooms: refused with unknown-peer naming the addressee, and not delivered.
    let other = clients[1].1.id().to_owned(); // room 1
    clients[0].1.signal(&other, json!("x")).await; // from room 0
    let e = clients[0].1.expect_error("unknown-peer").await;
    assert_eq!(e["to"], other.as_str());
    assert_eq!(e["fatal"], false);
    // A stranger, and oneself, are unknown too.
    clients[0].1.signal(&"0".repeat(32), json!(1)).await;
    clients[0].1.expect_error("unknown-peer").await;
    let me = clients[0].1.id().to_owned();
    clients[0].1.signal(&me, json!(1)).await;
    clients[0].1.expect_error("unknown-peer").await;
    clients[1]
        .1
        .expect_nothing(Duration::from_millis(100))
        .await;

    // Client 3 (room 0) leaves by message, client 4 (room 1) by closing. Each room hears
    // about its own and nothing else.
    let left0 = clients[3].1.id().to_owned();
    clients[3].1.send(json!({"type": "leave"})).await;
    let left1 = clients[4].1.id().to_owned();
    let (_, c4) = clients.remove(4);
    c4.close().await;
    for (i, (room, c)) in clients.iter_mut().enumerate() {
        match room {
            0 if i != 3 => c.expect_peer_left(&left0).await,
            1 => c.expect_peer_left(&left1).await,
            _ => {}
        }
    }
    for (_, c) in clients.iter_mut() {
        c.expect_nothing(Duration::from_millis(20)).await;
    }
    // The peer that left is no longer addressable; the one that left may join again, with a
    // new id.
    clients[0].1.signal(&left0, json!(1)).await;
    clients[0].1.expect_error("unknown-peer").await;
    clients[3].1.join(&rooms[2]).await;
    assert_ne!(clients[3].1.id(), left0);
    server
        .wait_health("49 peers", |h| h["peers"] == 49 && h["connections"] == 49)
        .await;

    for (_, c) in clients {
        c.close().await;
    }
    server
        .wait_health("empty", |h| {
            h["rooms"] == 0 && h["peers"] == 0 && h["connections"] == 0
        })
        .await;
    server.stop().await.expect("serve");
}

#[tokio::test]
async fn version_mismatch_is_fatal() {
    let server = Server::start(Config::default()).await;
    let mut c = server.client().await;
    c.send(json!({"type": "join", "v": 2, "swarm": swarm(1)}))
        .await;
    let e = c.expect_error("unsupported-version").await;
    assert_eq!(e["supported"], json!([1]));
    assert_eq!(c.ending().await, Ending::Closed(1008));
    // A missing version is a malformed join.
    let mut c = server.client().await;
    c.send(json!({"type": "join", "swarm": swarm(1)})).await;
    c.expect_fatal("bad-message", 1008).await;
    server.stop().await.expect("serve");
}

#[tokio::test]
async fn state_errors_keep_the_connection() {
    let server = Server::start(Config::default()).await;
    let mut c = server.client().await;
    c.signal(&"0".repeat(32), json!(1)).await;
    c.expect_error("not-joined").await;
    c.send(json!({"type": "leave"})).await;
    c.expect_error("not-joined").await;
    for bad in [
        "AB".repeat(20),
        "ab".repeat(21),
        "xy".repeat(20),
        String::new(),
    ] {
        c.send(json!({"type": "join", "v": 1, "swarm": bad})).await;
        c.expect_error("bad-swarm").await;
    }
    c.join(&swarm(5)).await;
    c.send(json!({"type": "join", "v": 1, "swarm": swarm(6)}))
        .await;
    c.expect_error("already-joined").await;
    c.send(json!({"type": "join", "v": 1, "swarm": swarm(5)}))
        .await;
    c.expect_error("already-joined").await;
    // Still in the first room, still usable.
    let mut d = server.client().await;
    let sample = d.join(&swarm(5)).await;
    assert_eq!(sample, vec![c.id().to_owned()]);
    d.signal(c.id(), json!({"ice": 1})).await;
    let from = d.id().to_owned();
    c.expect_signal(&from, &json!({"ice": 1})).await;
    let h = server.health().await;
    assert_eq!(
        (h["rooms"].as_u64(), h["peers"].as_u64()),
        (Some(1), Some(2))
    );
    server.stop().await.expect("serve");
}

#[tokio::test]
async fn room_and_server_limits() {
    let server = Server::start(Config {
        max_peers_per_room: 3,
        max_rooms: 2,
        max_connections: 8,
        ..Config::default()
    })
    .await;
    let mut a: Vec<Client> = Vec::new();
    for _ in 0..3 {
        let mut c = server.client().await;
        c.join(&swarm(1)).await;
        a.push(c);
    }
    let mut late = server.client().await;
    late.send(json!({"type": "join", "v": 1, "swarm": swarm(1)}))
        .await;
    late.expect_error("room-full").await;
    // Refused, but not disconnected: it can join another room.
    late.join(&swarm(2)).await;
    let mut third = server.client().await;
    third
        .send(json!({"type": "join", "v": 1, "swarm": swarm(3)}))
        .await;
    third.expect_error("too-many-rooms").await;
    // A room that empties frees its slot.
    late.send(json!({"type": "leave"})).await;
    server.wait_health("one room", |h| h["rooms"] == 1).await;
    third.join(&swarm(3)).await;
    // A peer leaving the full room frees a place.
    let gone = a.pop().expect("client");
    let gone_id = gone.id().to_owned();
    gone.close().await;
    for c in a.iter_mut() {
        c.expect_peer_left(&gone_id).await;
    }
    late.join(&swarm(1)).await;

    // Connections: fill up to the limit of 8, then one more is refused with HTTP 503.
    let open = server.health().await["connections"].as_u64().expect("n") as usize;
    let mut extra = Vec::new();
    for _ in open..8 {
        extra.push(server.client().await);
    }
    let refused = tokio_tungstenite::connect_async(server.url()).await;
    match refused {
        Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => {
            assert_eq!(resp.status().as_u16(), 503)
        }
        other => panic!("expected HTTP 503, got {:?}", other.map(|_| ())),
    }
    extra.pop().expect("client").close().await;
    server
        .wait_health("a free connection", |h| h["connections"] == 7)
        .await;
    let mut again = server.client().await;
    // Room 1 is full again (after `late` rejoined); room 3 has `third`.
    let sample = again.join(&swarm(3)).await;
    assert_eq!(sample, vec![third.id().to_owned()]);
    server.stop().await.expect("serve");
}
