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

#[tokio::test]
async fn page_reports_add_up_per_swarm_and_go_with_the_last_reporter() {
    let server = Server::start(Config::default()).await;
    let (mut a, mut b) = (server.client().await, server.client().await);
    a.join(&swarm(5)).await;
    b.join(&swarm(5)).await;
    let report = |peers: u64, http: u64, seeders: u64| json!({"type": "report", "bytes": {"peers": peers, "http": http, "seeders": seeders}, "stalls": 1, "stallMs": 250});
    a.send(report(1_000_000, 50_000, 200_000)).await;
    b.send(report(3_000_000, 0, 100_000)).await;
    // Too soon after a's first: refused, not fatal, counted nowhere.
    a.send(report(9_000_000, 0, 0)).await;
    let refused = a.expect_error("bad-report").await;
    assert_eq!(refused["fatal"], false);
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("at most every"),
        "{refused}"
    );
    let s = swarm(5);
    let bytes = |source: &str| {
        format!("ppspp_signal_reported_bytes_total{{swarm=\"{s}\",source=\"{source}\"}}")
    };
    let text = metrics(server.addr).await;
    assert_eq!(sample(&text, &bytes("peers")), Some(4_000_000.0), "{text}");
    assert_eq!(sample(&text, &bytes("http")), Some(50_000.0));
    assert_eq!(sample(&text, &bytes("seeders")), Some(300_000.0));
    assert_eq!(
        sample(
            &text,
            &format!("ppspp_signal_reported_stalls_total{{swarm=\"{s}\"}}")
        ),
        Some(2.0)
    );
    assert_eq!(
        sample(
            &text,
            &format!("ppspp_signal_reporting_peers{{swarm=\"{s}\"}}")
        ),
        Some(2.0)
    );
    assert_eq!(
        sample(&text, "ppspp_signal_reports_refused_total"),
        Some(1.0)
    );
    // A report outside a room is refused too.
    let mut outside = server.client().await;
    outside.send(report(1, 1, 1)).await;
    outside.expect_error("not-joined").await;

    a.close().await;
    let deadline = tokio::time::Instant::now() + WAIT;
    while value(
        &server,
        &format!("ppspp_signal_reporting_peers{{swarm=\"{s}\"}}"),
    )
    .await
        != 1.0
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "a's leaving was not counted"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    b.close().await;
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let text = metrics(server.addr).await;
        if sample(&text, &bytes("peers")).is_none() {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the swarm's series stayed:\n{text}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    server.stop().await.expect("serve");
}

#[tokio::test]
async fn the_welcome_says_how_often_to_report_or_nothing_when_reports_are_off() {
    let on = Server::start(Config::default()).await;
    let mut c = on.client().await;
    c.send(json!({"type": "join", "v": 1, "swarm": swarm(3)}))
        .await;
    let welcome = c.recv().await;
    assert_eq!(welcome["reportEvery"], 30, "{welcome}");
    on.stop().await.expect("serve");

    let off = Server::start(Config {
        report_every: std::time::Duration::ZERO,
        ..Config::default()
    })
    .await;
    let mut c = off.client().await;
    c.send(json!({"type": "join", "v": 1, "swarm": swarm(3)}))
        .await;
    let welcome = c.recv().await;
    assert!(welcome.get("reportEvery").is_none(), "{welcome}");
    c.send(json!({"type": "report", "bytes": {"peers": 1, "http": 0, "seeders": 0}, "stalls": 0, "stallMs": 0}))
        .await;
    let refused = c.expect_error("bad-report").await;
    assert!(refused["message"].as_str().unwrap().contains("no reports"));
    off.stop().await.expect("serve");
}
