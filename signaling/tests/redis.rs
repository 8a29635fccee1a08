//! Rooms in Redis: several instances serve one swarm, an instance that dies leaves no
//! ghosts, and a Redis restart is waited out. Each test starts its own `redis-server` on a
//! loopback port.

mod common;

use std::time::{Duration, Instant};

use common::redis_server::RedisServer;
use common::{Binary, Client, Ending, Server, swarm};
use ppspp_signal::{Config, RedisConfig};
use serde_json::json;

/// Short, so the tests wait seconds for expiry; refreshes come every third of it.
const PEER_TTL: Duration = Duration::from_secs(2);

fn config(redis: &RedisServer) -> Config {
    Config {
        redis: Some(RedisConfig {
            peer_ttl: PEER_TTL,
            ..RedisConfig::new(redis.url())
        }),
        ..Config::default()
    }
}

/// Offer one way, answer the other: both directions cross the instances.
async fn offer_answer(a: &mut Client, b: &mut Client) {
    let offer = json!({"sdp": format!("offer from {}", a.id())});
    a.signal(b.id(), offer.clone()).await;
    b.expect_signal(a.id(), &offer).await;
    let answer = json!({"sdp": format!("answer from {}", b.id())});
    b.signal(a.id(), answer.clone()).await;
    a.expect_signal(b.id(), &answer).await;
}

#[tokio::test]
async fn clients_of_three_instances_meet_signal_and_hear_departures() {
    let redis = RedisServer::start();
    let servers = [
        Server::start(config(&redis)).await,
        Server::start(config(&redis)).await,
        Server::start(config(&redis)).await,
    ];
    let room = swarm(1);
    let mut a = servers[0].client().await;
    assert!(a.join(&room).await.is_empty());
    let mut b = servers[1].client().await;
    assert_eq!(b.join(&room).await, vec![a.id().to_owned()]);
    let mut c = servers[2].client().await;
    let mut sample = c.join(&room).await;
    sample.sort();
    let mut expected = vec![a.id().to_owned(), b.id().to_owned()];
    expected.sort();
    assert_eq!(sample, expected, "the welcome samples the whole room");
    offer_answer(&mut c, &mut a).await;
    offer_answer(&mut c, &mut b).await;
    offer_answer(&mut b, &mut a).await;
    // A peer of the same instance is still reached directly.
    let mut a2 = servers[0].client().await;
    a2.join(&room).await;
    offer_answer(&mut a2, &mut a).await;
    // Another room's peer is unknown, from any instance.
    let mut other = servers[1].client().await;
    other.join(&swarm(2)).await;
    c.signal(other.id(), json!({"sdp": "x"})).await;
    let e = c.expect_error("unknown-peer").await;
    assert_eq!(e["to"], other.id());
    let h = servers[0].health().await;
    assert_eq!(
        (h["rooms_in"].as_str(), h["peers"].as_u64()),
        (Some("redis"), Some(2))
    );
    // b leaves: a and c knew it (a from b's signal, c from its sample) and are told.
    let gone = b.id().to_owned();
    b.close().await;
    a.expect_peer_left(&gone).await;
    c.expect_peer_left(&gone).await;
    // Its id is unknown at once.
    a.signal(&gone, json!({"sdp": "late"})).await;
    a.expect_error("unknown-peer").await;
}

#[tokio::test]
async fn the_room_limit_holds_across_instances() {
    let redis = RedisServer::start();
    let limited = Config {
        max_peers_per_room: 3,
        ..config(&redis)
    };
    let one = Server::start(limited.clone()).await;
    let two = Server::start(limited).await;
    let room = swarm(3);
    let mut clients = Vec::new();
    for server in [&one, &two, &one] {
        let mut c = server.client().await;
        c.join(&room).await;
        clients.push(c);
    }
    for server in [&one, &two] {
        let mut late = server.client().await;
        late.send(json!({"type": "join", "v": 1, "swarm": room}))
            .await;
        late.expect_error("room-full").await;
    }
    // A place freed on one instance is free on the other.
    clients.remove(0).close().await;
    let mut c = two.client().await;
    assert_eq!(c.join(&room).await.len(), 2);
}

/// Polls until `client` joins `room` with a welcome sample that satisfies `pred`; each try
/// is a new client (a joined one cannot join again).
async fn join_until(
    server: &Server,
    room: &str,
    within: Duration,
    what: &str,
    pred: impl Fn(&[String]) -> bool,
) -> Client {
    let deadline = Instant::now() + within;
    loop {
        let mut c = server.client().await;
        let sample = c.join(room).await;
        if pred(&sample) {
            return c;
        }
        assert!(Instant::now() < deadline, "{what}: last sample {sample:?}");
        c.close().await;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_killed_instance_leaves_no_ghosts_and_its_clients_go_elsewhere() {
    let redis = RedisServer::start();
    let ttl = PEER_TTL.as_secs_f64().to_string();
    let mut doomed = Binary::start(&["--redis", &redis.url(), "--redis-peer-ttl", &ttl]);
    let survivor = Server::start(config(&redis)).await;
    let room = swarm(4);
    let mut here = survivor.client().await;
    here.join(&room).await;
    let mut there = Client::connect(&doomed.url()).await;
    assert_eq!(there.join(&room).await, vec![here.id().to_owned()]);
    offer_answer(&mut there, &mut here).await;
    let ghost = there.id().to_owned();
    // No leave, no close frame: the process is gone.
    let killed = Instant::now();
    doomed.signal(libc::SIGKILL);
    assert_eq!(there.ending().await, Ending::Dropped);
    // Its peer expires: the survivor's client that knew it is told, within the ttl and a
    // refresh period (and scheduling slack).
    let bound = PEER_TTL + PEER_TTL / 3 + Duration::from_secs(2);
    tokio::time::timeout(bound, here.expect_peer_left(&ghost))
        .await
        .expect("no peer-left for the dead instance's peer");
    assert!(
        killed.elapsed() >= PEER_TTL / 2,
        "announced before it could expire"
    );
    // Newcomers are not offered it, and signals to it are refused.
    let mut newcomer = survivor.client().await;
    assert_eq!(newcomer.join(&room).await, vec![here.id().to_owned()]);
    here.signal(&ghost, json!({"sdp": "anyone?"})).await;
    here.expect_error("unknown-peer").await;
    // The dead instance's client reconnects to the survivor and is back in the swarm.
    let mut back = survivor.client().await;
    let sample = back.join(&room).await;
    assert_eq!(sample.len(), 2);
    offer_answer(&mut back, &mut here).await;
}

#[tokio::test]
async fn instances_ride_out_a_redis_restart() {
    let mut redis = RedisServer::start();
    let one = Server::start(config(&redis)).await;
    let two = Server::start(config(&redis)).await;
    let room = swarm(5);
    let mut a = one.client().await;
    a.join(&room).await;
    let mut b = two.client().await;
    b.join(&room).await;
    offer_answer(&mut a, &mut b).await;

    redis.kill();
    for s in [&one, &two] {
        s.wait_health_for(Duration::from_secs(10), "redis down", |h| {
            h["status"] == "unavailable"
        })
        .await;
    }
    // Joins are refused, and say so: clients retry later or elsewhere.
    let mut refused = two.client().await;
    refused
        .send(json!({"type": "join", "v": 1, "swarm": room}))
        .await;
    refused.expect_fatal("unavailable", 1013).await;
    // A signal to another instance's client cannot be looked up: the sender is told, and
    // stays connected.
    a.signal(b.id(), json!({"sdp": "lost"})).await;
    let e = a.expect_error("peer-busy").await;
    assert_eq!(
        (e["fatal"].as_bool(), e["to"].as_str()),
        (Some(false), Some(b.id()))
    );

    redis.restart(); // empty: the instances put their peers back
    for s in [&one, &two] {
        s.wait_health_for(Duration::from_secs(10), "redis back", |h| {
            h["status"] == "ok"
        })
        .await;
    }
    let ids = [a.id().to_owned(), b.id().to_owned()];
    let mut c = join_until(
        &two,
        &room,
        Duration::from_secs(10),
        "peers put back",
        |s| ids.iter().all(|id| s.contains(id)),
    )
    .await;
    // Subscriptions are back too: signals cross the instances again.
    offer_answer(&mut c, &mut a).await;
    offer_answer(&mut a, &mut b).await;
}

#[test]
fn the_binary_refuses_an_unreachable_or_misconfigured_redis() {
    use std::process::Command;
    let unreachable = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        format!("redis://{}", l.local_addr().expect("addr"))
    };
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_ppspp-signal"))
            .args(["--bind", "127.0.0.1:0"])
            .args(args)
            .output()
            .expect("run ppspp-signal")
    };
    let out = run(&["--redis", &unreachable]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot use Redis at"), "{err}");
    let out = run(&["--redis", "redis://127.0.0.1", "--redis-peer-ttl", "0.1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("peer ttl"));
    let out = run(&["--redis-prefix", "x"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "a prefix without --redis is a mistake"
    );
}

/// Redis stalls (SIGSTOP) for longer than the peer ttl while clients of three instances
/// stay connected. Before, when it woke, every peer had expired by Redis's clock, the
/// first refresh swept the other instances' peers, and clients were told that peers still
/// connected had left. Now nobody hears of a departure, and signals cross the instances
/// again within a few seconds.
#[tokio::test]
async fn a_redis_stall_longer_than_the_peer_ttl_loses_nobody() {
    let redis = RedisServer::start();
    let ttl = Duration::from_secs(3);
    let config = || Config {
        redis: Some(RedisConfig {
            peer_ttl: ttl,
            ..RedisConfig::new(redis.url())
        }),
        ..Config::default()
    };
    let servers = [
        Server::start(config()).await,
        Server::start(config()).await,
        Server::start(config()).await,
    ];
    let room = swarm(6);
    let mut clients = Vec::new();
    for s in &servers {
        let mut c = s.client().await;
        c.join(&room).await;
        clients.push(c);
    }
    let [a, b, c] = &mut clients[..] else {
        unreachable!()
    };
    offer_answer(a, b).await;
    offer_answer(a, c).await;
    offer_answer(b, c).await;

    redis.stall(true);
    tokio::time::sleep(ttl + Duration::from_secs(2)).await;
    redis.stall(false);
    let woke = Instant::now();
    for s in &servers {
        s.wait_health_for(Duration::from_secs(10), "redis answers", |h| {
            h["status"] == "ok"
        })
        .await;
    }
    // Signals cross again soon (each instance puts its peers back as Redis answers): a
    // probe answered `unknown-peer` is sent again.
    let probe = json!({"sdp": "probe"});
    loop {
        a.signal(b.id(), probe.clone()).await;
        match tokio::time::timeout(Duration::from_millis(300), a.recv()).await {
            Err(_) => break,
            Ok(m) => {
                assert!(
                    m["type"] == "error" && m["code"] == "unknown-peer",
                    "a got {m}"
                );
                assert!(
                    woke.elapsed() < Duration::from_secs(5),
                    "b unknown {:?} after the stall",
                    woke.elapsed()
                );
            }
        }
    }
    b.expect_signal(a.id(), &probe).await;
    // Nobody was told that another left.
    for c in [a, b, c] {
        c.expect_nothing(Duration::from_millis(1_500)).await;
    }
}
