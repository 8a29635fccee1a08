//! `p2p_min_peers`: below it a room's welcomes list no peers and say `p2pFrom`; the
//! newcomer that brings the room to it is offered the others, in memory and in Redis.

mod common;

use common::redis_server::RedisServer;
use common::{Client, Server, swarm};
use ppspp_signal::{Config, RedisConfig};
use serde_json::{Value, json};

async fn welcome(c: &mut Client, room: &str) -> Value {
    c.send(json!({"type": "join", "v": 1, "swarm": room})).await;
    let m = c.recv().await;
    assert_eq!(m["type"], "welcome", "{m}");
    m
}

/// Three joins to `room`, through `servers` in turn: the first two held, the third offered
/// both, the fourth offered a sample with no hold.
async fn grows_to_three(servers: &[&Server], room: &str) {
    let mut clients = Vec::new();
    let mut ids = Vec::new();
    for i in 0..4 {
        let mut c = servers[i % servers.len()].client().await;
        let m = welcome(&mut c, room).await;
        let peers: Vec<String> = serde_json::from_value(m["peers"].clone()).expect("peers");
        if i < 2 {
            assert_eq!(peers, Vec::<String>::new(), "below the threshold: {m}");
            assert_eq!(m["p2pFrom"], 3, "{m}");
        } else {
            assert!(m.get("p2pFrom").is_none(), "{m}");
            let mut got = peers.clone();
            got.sort();
            let mut want = ids.clone();
            want.sort();
            assert_eq!(
                got, want,
                "every peer there is offered (the room is small): {m}"
            );
        }
        ids.push(m["peer_id"].as_str().expect("id").to_owned());
        clients.push(c);
    }
    for c in clients {
        c.close().await;
    }
}

#[tokio::test]
async fn a_room_below_the_threshold_is_told_and_offered_nobody() {
    let server = Server::start(Config {
        p2p_min_peers: 3,
        ..Config::default()
    })
    .await;
    grows_to_three(&[&server], &swarm(1)).await;
    // Off by default: the second peer is offered the first.
    let plain = Server::start(Config::default()).await;
    let mut a = plain.client().await;
    let first = welcome(&mut a, &swarm(2)).await;
    assert!(first.get("p2pFrom").is_none(), "{first}");
    let mut b = plain.client().await;
    let second = welcome(&mut b, &swarm(2)).await;
    assert_eq!(second["peers"], json!([first["peer_id"]]));
    server.stop().await.expect("serve");
    plain.stop().await.expect("serve");
}

#[tokio::test]
async fn with_redis_the_room_counts_every_instance() {
    let redis = RedisServer::start();
    let config = || Config {
        p2p_min_peers: 3,
        redis: Some(RedisConfig::new(redis.url())),
        ..Config::default()
    };
    let (one, two) = (Server::start(config()).await, Server::start(config()).await);
    grows_to_three(&[&one, &two], &swarm(3)).await;
    one.stop().await.expect("serve");
    two.stop().await.expect("serve");
}

#[test]
fn a_threshold_above_the_room_limit_is_refused() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ppspp-signal"))
        .args([
            "--bind",
            "127.0.0.1:0",
            "--max-peers-per-room",
            "10",
            "--p2p-min-peers",
            "11",
        ])
        .output()
        .expect("run ppspp-signal");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("p2p_min_peers"));
}
