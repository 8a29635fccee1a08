//! Two real engines over simulated links.

use ppspp::engine::{CloseReason, EngineConfig, Event, SendState};
use ppspp::time::Time;
use ppspp_sim::link::LinkConfig;
use ppspp_sim::net::{Network, NodeId};
use ppspp_sim::scenario::{Content, config};
use std::time::Duration;

const MBIT: u64 = 1_000_000;

/// Seeder (node 0) and leecher (node 1), each on `bw` up and down, 20 ms apart; `loss`
/// on each uplink, so each direction loses that fraction.
fn pair(content: &Content, bw: u64, loss: f64, lconfig: EngineConfig, seed: u64) -> Network {
    let mut net = Network::new(seed);
    let up = LinkConfig::new(bw, 100_000).with_loss(loss);
    let down = LinkConfig::new(bw, 100_000);
    let s = net.add_node(
        Network::peer(content.seeder(config(1)), None),
        up.clone(),
        down.clone(),
        Duration::from_millis(10),
    );
    let l = net.add_node(
        Network::peer(content.leecher(lconfig), None),
        up,
        down,
        Duration::from_millis(10),
    );
    net.with_engine(l, |e, now| e.connect(s, now));
    net
}

fn complete(net: &Network, id: NodeId) -> bool {
    net.engine(id).is_complete()
}

#[test]
fn content_completes_byte_identical() {
    let c = Content::new(500 * 1024 + 333, 1024, 1);
    let mut net = pair(&c, 10 * MBIT, 0.0, config(2), 11);
    assert!(
        net.run_while(Duration::from_millis(100), Time::from_millis(60_000), |n| {
            complete(n, 1)
        })
    );
    let l = net.engine(1);
    assert!(l.store().matches_original());
    assert_eq!(l.store().corrupt_writes, 0);
    assert_eq!(l.stats().bytes_downloaded, c.len() as u64);
    let events: Vec<_> = net.peer_ref(1).events.iter().map(|(_, e)| e).collect();
    assert!(events.contains(&&Event::PeerConnected { peer: 0 }));
    assert!(events.contains(&&Event::Complete));
}

#[test]
fn five_percent_loss_completes_without_double_counting() {
    let c = Content::new(300 * 1024, 1024, 2);
    // Every network seed: which datagrams are lost must not decide whether it completes.
    for seed in 1..=8 {
        let mut net = pair(&c, 10 * MBIT, 0.05, config(3), seed);
        assert!(
            net.run_while(
                Duration::from_millis(100),
                Time::from_millis(300_000),
                |n| { complete(n, 1) }
            ),
            "seed {seed}: {:?}",
            net.engine(1).stats()
        );
        let l = net.engine(1);
        assert!(l.store().matches_original());
        let stats = l.stats();
        assert_eq!(stats.bytes_downloaded, c.len() as u64, "seed {seed}");
        assert_eq!(stats.chunks_verified, 300, "seed {seed}");
        assert!(net.links.iter().map(|l| l.stats.dropped_loss).sum::<u64>() > 0);
        assert!(net.engine(0).stats().retransmissions > 0);
    }
}

#[test]
fn idle_channels_keep_alive_and_explicit_close_removes_both_sides() {
    let c = Content::new(50 * 1024, 1024, 3);
    let mut net = pair(&c, 10 * MBIT, 0.0, config(4), 11);
    assert!(
        net.run_while(Duration::from_millis(100), Time::from_millis(30_000), |n| {
            complete(n, 1)
        })
    );
    // Idle for two simulated minutes: datagrams still flow (keep-alives), no data does.
    let up0 = net.engine(0).stats().bytes_uploaded;
    let dg0 = net.engine(0).stats().datagrams_sent + net.engine(1).stats().datagrams_sent;
    let t = net.now;
    net.run_until(Time::from_micros(t.as_micros() + 120_000_000));
    assert_eq!(
        net.engine(0).stats().bytes_uploaded,
        up0,
        "idle seeder sent data"
    );
    let dg1 = net.engine(0).stats().datagrams_sent + net.engine(1).stats().datagrams_sent;
    assert!(dg1 > dg0, "no keep-alives in two idle minutes");
    for id in [0, 1] {
        let chans = net.engine(id).channel_stats();
        assert_eq!(chans.len(), 1, "node {id} lost its idle channel");
        assert_eq!(chans[0].in_flight, 0);
        assert_eq!(chans[0].requests_outstanding, 0);
    }
    // The leecher never sent DATA, so its channel reports PingPong rather than KeepAlive.
    assert_eq!(
        net.engine(0).channel_stats()[0].send_state,
        SendState::KeepAlive
    );
    // Explicit close from the leecher: gone on both sides.
    net.with_engine(1, |e, _| e.close(&0));
    let t = net.now;
    net.run_until(Time::from_micros(t.as_micros() + 1_000_000));
    assert!(net.engine(1).channel_stats().is_empty());
    assert!(net.engine(0).channel_stats().is_empty());
    assert!(net.peer_ref(0).events.iter().any(|(_, e)| *e
        == Event::PeerClosed {
            peer: 1,
            reason: CloseReason::ClosedByPeer
        }));
}

#[test]
fn rate_limits_hold_within_ten_percent() {
    // Upload limit at the seeder.
    let c = Content::new(4 * 1024 * 1024, 1024, 4);
    let limit = 40_000u64; // bytes/s
    let mut net = Network::new(5);
    let link = LinkConfig::new(10 * MBIT, 100_000);
    let s = net.add_node(
        Network::peer(
            c.seeder(EngineConfig {
                upload_limit: Some(limit),
                ..config(1)
            }),
            None,
        ),
        link.clone(),
        link.clone(),
        Duration::from_millis(10),
    );
    let l = net.add_node(
        Network::peer(c.leecher(config(2)), None),
        link.clone(),
        link.clone(),
        Duration::from_millis(10),
    );
    net.with_engine(l, |e, now| e.connect(s, now));
    net.run_until(Time::from_millis(10_000));
    let b0 = net.engine(l).stats().bytes_downloaded;
    net.run_until(Time::from_millis(70_000));
    let rate = (net.engine(l).stats().bytes_downloaded - b0) as f64 / 60.0;
    assert!(
        (rate / limit as f64 - 1.0).abs() < 0.10,
        "upload-limited rate {rate} B/s vs {limit}"
    );

    // Download limit at the leecher.
    let mut net = Network::new(6);
    let s = net.add_node(
        Network::peer(c.seeder(config(1)), None),
        link.clone(),
        link.clone(),
        Duration::from_millis(10),
    );
    let l = net.add_node(
        Network::peer(
            c.leecher(EngineConfig {
                download_limit: Some(limit),
                ..config(2)
            }),
            None,
        ),
        link.clone(),
        link,
        Duration::from_millis(10),
    );
    net.with_engine(l, |e, now| e.connect(s, now));
    net.run_until(Time::from_millis(10_000));
    let b0 = net.engine(l).stats().bytes_downloaded;
    net.run_until(Time::from_millis(70_000));
    let rate = (net.engine(l).stats().bytes_downloaded - b0) as f64 / 60.0;
    assert!(
        (rate / limit as f64 - 1.0).abs() < 0.10,
        "download-limited rate {rate} B/s vs {limit}"
    );
}
