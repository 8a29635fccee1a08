//! LEDBAT through a simulated bottleneck: it fills the link while holding the queue near
//! its 25 ms target, and it yields to a TCP-like flow.

use ppspp::congestion::CongestionConfig;
use ppspp_sim::bulk::{Bulk, Flow, run};
use std::time::Duration;

fn bulk(flows: Vec<Flow>, queue_bytes: usize, duration_s: f64) -> Bulk {
    Bulk {
        bandwidth_bps: 2_000_000,
        queue_bytes,
        owd: Duration::from_millis(20),
        loss: 0.0,
        duration_s,
        sample_s: 0.1,
        flows,
        content_len: None,
        seed: 3,
    }
}

#[test]
fn ledbat_fills_the_link_and_holds_queuing_delay_near_target() {
    // A 200 KB queue holds 800 ms at 2 Mbit/s: only LEDBAT, not loss, can keep it short.
    let r = run(&bulk(vec![Flow::ledbat(0.0)], 200_000, 25.0));
    let util = r.mean(8.0, 25.0, |s| s.utilisation);
    let queue = r.mean(8.0, 25.0, |s| s.queue_ms);
    let max_queue = r
        .samples
        .iter()
        .filter(|s| s.t >= 8.0)
        .map(|s| s.queue_ms)
        .fold(0.0, f64::max);
    // LEDBAT saws around its target (it backs off each time the delay passes 25 ms, and
    // the sample instant falls anywhere on the saw), so we assert the mean lies within
    // ±50 % of TARGET and the queue never grows past twice TARGET (a queue-filling
    // sender would reach 800 ms here).
    assert!(util > 0.85, "utilisation {util:.2}");
    assert!(
        (12.5..=37.5).contains(&queue),
        "mean queuing delay {queue:.1} ms, target 25 ms"
    );
    assert!(max_queue < 50.0, "queue reached {max_queue:.1} ms");
}

#[test]
fn ledbat_yields_to_tcp() {
    let mut b = bulk(
        vec![
            Flow::ledbat(0.0),
            Flow::Tcp {
                start: 8.0,
                stop: 20.0,
            },
        ],
        50_000,
        30.0,
    );
    b.sample_s = 0.25;
    let r = run(&b);
    let alone = r.mean(4.0, 8.0, |s| s.rate_mbps[0]);
    assert!(alone > 1.6, "LEDBAT alone {alone:.2} Mbit/s");
    // The yielding flow stays connected: backing off is not misbehaving.
    assert!(r.closed[0].is_none(), "channel closed: {:?}", r.closed[0]);
    // While TCP runs, LEDBAT leaves it most of the link.
    let ledbat = r.mean(10.0, 20.0, |s| s.rate_mbps[0]);
    let tcp = r.mean(10.0, 20.0, |s| s.rate_mbps[1]);
    let share = ledbat / (ledbat + tcp);
    assert!(share < 0.3, "LEDBAT share {share:.2} while TCP runs");
    // Its window shrinks as the delay passes its target.
    let before = r.mean(4.0, 8.0, |s| s.cwnd[0]);
    let during = r.mean(10.0, 20.0, |s| s.cwnd[0]);
    assert!(
        during < 0.75 * before,
        "LEDBAT cwnd {during:.1}, alone {before:.1}"
    );
    // And it takes the link back once TCP is gone.
    let after = r.mean(24.0, 30.0, |s| s.rate_mbps[0]);
    assert!(
        after > 0.8 * alone,
        "LEDBAT after TCP {after:.2}, alone {alone:.2}"
    );
}

#[test]
fn a_long_path_keeps_most_of_the_link_after_slow_start() {
    // 150 ms one-way at 10 Mbit/s with a 400 KB queue (the `delay` experiment's case):
    // slow start overshoots, since its exit signal is a round trip old. DTL's decrease of
    // β per datagram over target then took a window of hundreds to the minimum, and the
    // additive increase of one datagram per 0.3 s round trip left a fraction of the link
    // (docs/EXPERIMENTS.md, engine bug 11); bounded to half per round trip, the window
    // stays near the path's capacity.
    let mut b = bulk(vec![Flow::ledbat(0.0)], 400_000, 60.0);
    b.bandwidth_bps = 10_000_000;
    b.owd = Duration::from_millis(150);
    b.sample_s = 0.5;
    let r = run(&b);
    let late = r.mean(30.0, 60.0, |s| s.rate_mbps[0]);
    assert!(late > 6.5, "{late:.2} Mbit/s over 30–60 s");
    let min_cwnd_after_start = r
        .samples
        .iter()
        .filter(|s| s.t >= 5.0)
        .map(|s| s.cwnd[0])
        .fold(f64::INFINITY, f64::min);
    assert!(
        min_cwnd_after_start > 20.0,
        "the window fell to {min_cwnd_after_start:.1} datagrams"
    );
}

#[test]
fn random_loss_costs_little_of_the_link() {
    // The `loss` experiment's case at 1 %: 10 Mbit/s, 10 ms one-way, 100 KB queue. A loss
    // with no queue is taken for random and costs a tenth of the window, not half
    // (congestion/mod.rs); the RFC's rule, halving on every loss, runs beside it. Both
    // decrease once per flight, which alone keeps halving near 7 Mbit/s here; the
    // tolerant rule is what takes the flow clearly over it.
    let rate = |random_loss_delay| {
        let flow = Flow::Ppspp {
            start: 0.0,
            congestion: CongestionConfig {
                random_loss_delay,
                ..CongestionConfig::default()
            },
            priorities: vec![],
        };
        let mut b = bulk(vec![flow], 100_000, 30.0);
        b.bandwidth_bps = 10_000_000;
        b.owd = Duration::from_millis(10);
        b.loss = 0.01;
        b.sample_s = 0.5;
        run(&b).mean(5.0, 30.0, |s| s.rate_mbps[0])
    };
    let tolerant = rate(CongestionConfig::default().random_loss_delay);
    let halving = rate(None);
    assert!(
        tolerant > 7.0 && tolerant > 1.15 * halving,
        "{tolerant:.2} Mbit/s over 5–30 s at 1 % loss; halving on every loss {halving:.2}"
    );
}
