//! `/metrics`: what clients did shows in the counters, and what the server holds in the
//! gauges, with rooms in memory and in Redis.

mod common;

use common::redis_server::RedisServer;
use common::{Client, Server, WAIT, connect_from, metrics, sample, swarm};
use ppspp_signal::{Config, RedisConfig, TurnSecret};
use serde_json::json;
use tokio::time::timeout;

/// The value of `series` in a scrape of `server`; panics if it is missing.
async fn value(server: &Server, series: &str) -> f64 {
    let text = metrics(server.addr).await;
    sample(&text, series).unwrap_or_else(|| panic!("no {series} in\n{text}"))
}

#[tokio::test]
async fn counters_and_gauges_follow_what_clients_do() {
    let server = Server::start(Config {
        max_connections_per_ip: 3,
        turn_urls: vec!["turn:turn.example.org:3478".into()],
        turn_secret: Some(TurnSecret::new("a-secret-of-twenty-bytes")),
        ..Config::default()
    })
    .await;
    let text = metrics(server.addr).await;
    assert_eq!(sample(&text, "ppspp_signal_rooms"), Some(0.0), "{text}");
    assert_eq!(sample(&text, "ppspp_signal_backend_up"), Some(1.0));

    let mut a = Client::connect_from("127.0.0.6", server.addr).await;
    let mut b = Client::connect_from("127.0.0.6", server.addr).await;
    a.join(&swarm(7)).await;
    b.join(&swarm(7)).await;
    let mut lone = Client::connect_from("127.0.0.6", server.addr).await;
    lone.join(&swarm(8)).await;
    // Delivered, to nobody, and a join refused.
    let offer = json!({"sdp": "offer"});
    a.signal(b.id(), offer.clone()).await;
    b.expect_signal(a.id(), &offer).await;
    a.signal(&format!("{:032x}", 1), offer.clone()).await;
    a.expect_error("unknown-peer").await;
    let mut stray = server.client().await;
    stray
        .send(json!({"type": "join", "v": 1, "swarm": "not-a-root"}))
        .await;
    stray.expect_error("bad-swarm").await;
    // A fourth connection from the address is refused at the door.
    let tcp = connect_from("127.0.0.6", server.addr)
        .await
        .expect("connect");
    let refused = timeout(
        WAIT,
        tokio_tungstenite::client_async(format!("ws://{}/ws", server.addr), tcp),
    )
    .await
    .expect("handshake timed out");
    assert!(refused.is_err(), "a fourth connection was taken");

    let text = metrics(server.addr).await;
    let expect = [
        ("ppspp_signal_joins_total{outcome=\"welcome\"}", 3.0),
        ("ppspp_signal_joins_total{outcome=\"bad-swarm\"}", 1.0),
        ("ppspp_signal_signals_total{outcome=\"delivered\"}", 1.0),
        ("ppspp_signal_signals_total{outcome=\"unknown-peer\"}", 1.0),
        ("ppspp_signal_errors_total{code=\"unknown-peer\"}", 1.0),
        ("ppspp_signal_errors_total{code=\"bad-swarm\"}", 1.0),
        (
            "ppspp_signal_connections_refused_total{limit=\"connections-per-ip\"}",
            1.0,
        ),
        ("ppspp_signal_turn_credentials_total", 3.0),
        ("ppspp_signal_rooms", 2.0),
        ("ppspp_signal_peers", 3.0),
        ("ppspp_signal_rooms_by_size{peers=\"1\"}", 1.0),
        ("ppspp_signal_rooms_by_size{peers=\"2-4\"}", 1.0),
        ("ppspp_signal_connections", 4.0),
    ];
    for (series, want) in expect {
        assert_eq!(sample(&text, series), Some(want), "{series} in\n{text}");
    }
    assert!(text.ends_with("# EOF\n"));

    b.close().await;
    lone.close().await;
    let deadline = tokio::time::Instant::now() + WAIT;
    while value(&server, "ppspp_signal_peers").await != 1.0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "peers did not go down"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(value(&server, "ppspp_signal_rooms").await, 1.0);
    server.stop().await.expect("serve");
}

#[tokio::test]
async fn redis_round_trips_are_timed_per_operation() {
    let redis = RedisServer::start();
    let config = || Config {
        redis: Some(RedisConfig::new(redis.url())),
        ..Config::default()
    };
    let (one, two) = (Server::start(config()).await, Server::start(config()).await);
    let mut a = one.client().await;
    let mut b = two.client().await;
    a.join(&swarm(9)).await;
    b.join(&swarm(9)).await;
    // Across instances: the relay goes through Redis.
    let offer = json!({"sdp": "offer"});
    b.signal(a.id(), offer.clone()).await;
    a.expect_signal(b.id(), &offer).await;
    let joins = "ppspp_signal_redis_request_duration_seconds_count{operation=\"join\"}";
    let relays = "ppspp_signal_redis_request_duration_seconds_count{operation=\"relay\"}";
    assert_eq!(value(&one, joins).await, 1.0);
    assert_eq!(value(&two, joins).await, 1.0);
    assert_eq!(value(&two, relays).await, 1.0);
    assert_eq!(value(&one, "ppspp_signal_backend_up").await, 1.0);
    let text = metrics(one.addr).await;
    assert_eq!(
        sample(&text, "ppspp_signal_redis_errors_total{operation=\"join\"}"),
        None,
        "no join failed: {text}"
    );
    a.close().await;
    b.close().await;
    one.stop().await.expect("serve");
    two.stop().await.expect("serve");
}
