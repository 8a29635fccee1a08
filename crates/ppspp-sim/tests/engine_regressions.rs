//! Engine bugs the simulator found, kept as regression tests (see docs/EXPERIMENTS.md).

use ppspp::engine::{CloseReason, EngineConfig, Event};
use ppspp::time::Time;
use ppspp_sim::link::LinkConfig;
use ppspp_sim::net::Network;
use ppspp_sim::scenario::{Content, config};
use std::time::Duration;

fn pair(seed: u64, loss: f64, seeder: EngineConfig) -> Network {
    let c = Content::new(300 * 1024, 1024, 2);
    let mut net = Network::new(seed);
    let up = LinkConfig::new(10_000_000, 100_000).with_loss(loss);
    let down = LinkConfig::new(10_000_000, 100_000);
    let d = Duration::from_millis(10);
    let s = net.add_node(
        Network::peer(c.seeder(seeder), None),
        up.clone(),
        down.clone(),
        d,
    );
    let l = net.add_node(Network::peer(c.leecher(config(3)), None), up, down, d);
    net.with_engine(l, |e, now| e.connect(s, now));
    net
}

/// Bug 1: a seeder backing off under loss was dropped as "misbehaving".
#[test]
fn an_honest_seeder_under_loss_is_kept() {
    let mut net = pair(4, 0.05, config(1));
    net.run_until(Time::from_millis(60_000));
    let misbehaving = net.peer_ref(1).events.iter().any(|(_, e)| {
        matches!(
            e,
            Event::PeerClosed {
                reason: CloseReason::Misbehaving(_),
                ..
            }
        )
    });
    assert!(!misbehaving);
    assert!(net.engine(1).is_complete(), "{:?}", net.engine(1).stats());
}

/// Bug 2: a lost handshake answer (and the HAVEs with it) stalled the leecher forever.
#[test]
fn a_lost_handshake_answer_does_not_stall() {
    let mut net = pair(7, 0.05, config(1));
    net.run_until(Time::from_millis(60_000));
    assert!(
        net.engine(1).is_complete(),
        "{:?}",
        net.engine(1).channel_stats()
    );
}

/// Bug 3: a rate-limited engine asked to be woken in the past and spun. The network
/// panics if a peer asks to be woken at an instant its timers already served.
#[test]
fn a_rate_limited_engine_does_not_spin() {
    let mut net = pair(
        11,
        0.0,
        EngineConfig {
            upload_limit: Some(40_000),
            ..config(1)
        },
    );
    net.run_until(Time::from_millis(2_000));
    let got = net.engine(1).stats().bytes_downloaded;
    // Two seconds at 40 kB/s, and the limit's first burst.
    assert!((40_000..=140_000).contains(&got), "{got} bytes in 2 s");
}
