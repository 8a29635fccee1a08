//! Locality-aware samples: a newcomer is offered the peers of its address block first, then
//! those of its AS (from the operator's table), with places drawn from the whole room at
//! random; the client's address from a trusted proxy header when configured; the same
//! across instances sharing rooms in Redis.

mod common;

use std::collections::HashSet;
use std::sync::Arc;

use common::redis_server::RedisServer;
use common::{Client, Server, swarm};
use ppspp_signal::{AsTable, Config, RedisConfig};

/// Loopback addresses as networks: 127.0.1.0/24 is AS 64501, 127.0.2.0/24 AS 64502. Each
/// address is a block of its own (/32), so a block is one client address.
fn config() -> Config {
    let table = AsTable::parse("127.0.1.0\t24\t64501\n127.0.2.0\t24\t64502\n").expect("table");
    Config {
        sample_size: 4,
        random_sample_share: 0.25,
        locality_v4_prefix: 32,
        as_table: Some(Arc::new(table)),
        ..Config::default()
    }
}

/// Joins `n` clients from `from` to `room`; their peer ids.
async fn join_from(
    server: &Server,
    from: &str,
    room: &str,
    n: usize,
    kept: &mut Vec<Client>,
) -> Vec<String> {
    let mut ids = Vec::new();
    for _ in 0..n {
        let mut c = Client::connect_from(from, server.addr).await;
        c.join(room).await;
        ids.push(c.id().to_owned());
        kept.push(c);
    }
    ids
}

#[tokio::test]
async fn the_block_comes_first_then_the_as_then_the_rest() {
    let server = Server::start(config()).await;
    let room = swarm(1);
    let mut kept = Vec::new();
    // Far away first, so a sample in join order would never reach the close ones.
    let far = join_from(&server, "127.0.2.1", &room, 12, &mut kept).await;
    let same_as = join_from(&server, "127.0.1.2", &room, 3, &mut kept).await;
    let same_block = join_from(&server, "127.0.1.7", &room, 2, &mut kept).await;
    let far: HashSet<_> = far.into_iter().collect();
    let mut far_offered = 0;
    for _ in 0..20 {
        let mut newcomer = Client::connect_from("127.0.1.7", server.addr).await;
        let sample = newcomer.join(&room).await;
        assert_eq!(sample.len(), 4, "{sample:?}");
        // Three places for the closest: the block's two, then one of the AS.
        for id in &same_block {
            assert!(sample.contains(id), "the block's peers first: {sample:?}");
        }
        let close = sample
            .iter()
            .filter(|id| same_block.contains(id) || same_as.contains(id))
            .count();
        assert!(close >= 3, "then the AS: {sample:?}");
        far_offered += sample.iter().filter(|id| far.contains(*id)).count();
        newcomer.close().await;
    }
    // The random place reaches the rest of the room now and then.
    assert!(far_offered > 0, "the random place never drew a far peer");
    for c in kept {
        c.close().await;
    }
    server.stop().await.expect("serve");
}

#[tokio::test]
async fn behind_a_proxy_the_configured_header_names_the_client() {
    let server = Server::start(Config {
        sample_size: 3,
        random_sample_share: 0.34,
        client_ip_header: Some("X-Real-IP".into()),
        ..Config::default()
    })
    .await;
    let room = swarm(2);
    let mut kept = Vec::new();
    let mut far = Vec::new();
    for i in 1..=10 {
        let mut c =
            Client::connect_with_header(&server.url(), "X-Real-IP", &format!("203.0.113.{i}"))
                .await;
        c.join(&room).await;
        far.push(c.id().to_owned());
        kept.push(c);
    }
    let mut near = Vec::new();
    for i in 1..=2 {
        // As a proxy appends to X-Forwarded-For, the last address counts.
        let value = format!("192.0.2.99, 198.51.100.{i}");
        let mut c = Client::connect_with_header(&server.url(), "X-Real-IP", &value).await;
        c.join(&room).await;
        near.push(c.id().to_owned());
        kept.push(c);
    }
    for _ in 0..10 {
        let mut newcomer =
            Client::connect_with_header(&server.url(), "X-Real-IP", "198.51.100.200").await;
        let sample = newcomer.join(&room).await;
        for id in &near {
            assert!(
                sample.contains(id),
                "the proxy's address would make every client alike: {sample:?}"
            );
        }
        newcomer.close().await;
    }
    // No header: the connection's address, and the join works as ever.
    let mut plain = server.client().await;
    assert_eq!(plain.join(&room).await.len(), 3);
    plain.close().await;
    for c in kept {
        c.close().await;
    }
    server.stop().await.expect("serve");
}

#[tokio::test]
async fn with_redis_the_closest_of_every_instance_come_first() {
    let redis = RedisServer::start();
    let with_redis = || Config {
        redis: Some(RedisConfig::new(redis.url())),
        ..config()
    };
    let (one, two) = (
        Server::start(with_redis()).await,
        Server::start(with_redis()).await,
    );
    let room = swarm(3);
    let mut kept = Vec::new();
    join_from(&one, "127.0.2.1", &room, 10, &mut kept).await;
    let same_block = join_from(&one, "127.0.1.7", &room, 2, &mut kept).await;
    let same_as = join_from(&two, "127.0.1.3", &room, 2, &mut kept).await;
    for _ in 0..10 {
        let mut newcomer = Client::connect_from("127.0.1.7", two.addr).await;
        let sample = newcomer.join(&room).await;
        for id in &same_block {
            assert!(
                sample.contains(id),
                "the block's peers on the other instance: {sample:?}"
            );
        }
        let close = sample
            .iter()
            .filter(|id| same_block.contains(id) || same_as.contains(id))
            .count();
        assert!(close >= 3, "{sample:?}");
        newcomer.close().await;
    }
    // A peer that left is no longer offered, from either instance.
    let gone = same_block[0].clone();
    let leaver = kept.remove(10);
    assert_eq!(leaver.id(), gone);
    leaver.close().await;
    let deadline = tokio::time::Instant::now() + common::WAIT;
    loop {
        let mut newcomer = Client::connect_from("127.0.1.7", two.addr).await;
        let sample = newcomer.join(&room).await;
        newcomer.close().await;
        if !sample.contains(&gone) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "a peer that left is still offered"
        );
    }
    for c in kept {
        c.close().await;
    }
    one.stop().await.expect("serve");
    two.stop().await.expect("serve");
}

#[test]
fn the_binary_says_what_is_wrong_with_a_table_or_a_setting() {
    use std::process::Command;
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_ppspp-signal"))
            .args(["--bind", "127.0.0.1:0"])
            .args(args)
            .output()
            .expect("run ppspp-signal")
    };
    let dir = std::env::temp_dir().join(format!("ppspp-signal-as-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let bad = dir.join("pfx2as.txt");
    std::fs::write(&bad, "198.51.100.0\t24\t64500\n198.51.100.0\t24\tAS64500\n").expect("write");
    let out = run(&["--as-table", bad.to_str().expect("path")]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--as-table") && err.contains("line 2"),
        "{err}"
    );
    let out = run(&["--as-table", dir.join("missing").to_str().expect("path")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--as-table"));
    let out = run(&["--random-sample-share", "1.5"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("random_sample_share"));
    let _ = std::fs::remove_dir_all(&dir);
}
