//! Two real engines over a tiny deterministic network (fixed delay, seeded loss): the
//! engine's own behaviour, before the full simulator gets involved.

use crate::common;

use common::engines::{events, info, leecher_with, pair};
use common::virtual_net::{VirtualNet as Net, poll};
use ppspp::codec::Message;
use ppspp::engine::{Connect, Engine, EngineConfig, Event};
use ppspp::merkle::{HashAlgorithm, MerkleTree};
use ppspp::store::MemoryStore;
use ppspp::time::Time;
use std::collections::BTreeSet;
use std::time::Duration;

type Node = Engine<u32, MemoryStore>;

/// Runs from time zero until `done` or `limit`; returns the time reached.
fn run(nodes: &mut [Node], net: &mut Net, limit: Time, done: impl Fn(&[Node]) -> bool) -> Time {
    run_from(Time::ZERO, nodes, net, limit, done)
}

fn run_from(
    start: Time,
    nodes: &mut [Node],
    net: &mut Net,
    limit: Time,
    done: impl Fn(&[Node]) -> bool,
) -> Time {
    net.now = start;
    net.run(nodes, limit, done)
}

fn content(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + i / 1024) as u8).collect()
}

/// A seeder of `data` (the content of `tree`, 1 KiB chunks) with RNG seed `seed`.
fn seeder(tree: &MerkleTree, data: &[u8], seed: u64) -> Node {
    Engine::new_seeder(
        EngineConfig {
            seed,
            ..EngineConfig::default()
        },
        tree,
        MemoryStore::with_content(data.to_vec(), 1024),
        Time::ZERO,
    )
    .unwrap()
}

fn leecher(tree: &MerkleTree, seed: u64) -> Node {
    leecher_with(
        tree,
        EngineConfig {
            seed,
            ..EngineConfig::default()
        },
    )
}

#[test]
fn leecher_gets_identical_content_from_a_seeder() {
    let data = content(300 * 1024 + 77);
    let mut nodes = pair(&data, 1024, EngineConfig::default());
    let mut net = Net::new(Duration::from_millis(10), 0, 1);
    let end = run(&mut nodes, &mut net, Time::from_millis(60_000), |n| {
        n[1].is_complete()
    });
    assert!(
        nodes[1].is_complete(),
        "incomplete at {end:?}: {:?}",
        nodes[1].stats()
    );
    assert_eq!(nodes[1].store().bytes(), &data[..]);
    let ev = events(&mut nodes[1]);
    assert!(ev.contains(&Event::PeerConnected { peer: 0 }));
    // Progress is one event per batch read by the adapter (here: one), and it says
    // "all of it" right before Complete.
    let n = nodes[1].chunk_count();
    let progress = ev
        .iter()
        .filter(|e| matches!(e, Event::Progress { .. }))
        .count();
    assert_eq!(progress, 1, "one Progress per batch, not one per chunk");
    let at = ev
        .iter()
        .position(|e| *e == Event::Complete)
        .expect("Complete");
    assert_eq!(ev[at - 1], Event::Progress { have: n, total: n });
    assert!(events(&mut nodes[1]).is_empty(), "nothing new to report");
    let stats = nodes[1].stats();
    assert_eq!(stats.bytes_downloaded, data.len() as u64);
    assert_eq!(stats.chunks_rejected, 0);
}

#[test]
fn progress_is_reported_after_each_batch_of_events() {
    let data = content(64 * 1024);
    let mut nodes = pair(&data, 1024, EngineConfig::default());
    let mut net = Net::new(Duration::from_millis(10), 0, 3);
    let mut seen: Vec<u64> = Vec::new();
    let mut limit = Time::ZERO;
    while !nodes[1].is_complete() && limit < Time::from_millis(30_000) {
        let from = limit;
        limit += Duration::from_millis(5);
        run_from(from, &mut nodes, &mut net, limit, |_| false);
        let batch = events(&mut nodes[1]);
        let have = nodes[1].have().count_filled();
        let progress: Vec<u64> = batch
            .iter()
            .filter_map(|e| match e {
                Event::Progress { have, .. } => Some(*have),
                _ => None,
            })
            .collect();
        let verified = batch
            .iter()
            .filter(|e| matches!(e, Event::ChunkVerified { .. }))
            .count();
        if verified > 0 {
            // At most one per batch (plus none when nothing changed), and it is current.
            assert_eq!(progress, vec![have], "batch of {verified} chunks");
            assert!(matches!(
                batch.last(),
                Some(Event::Progress { .. } | Event::Complete)
            ));
        } else {
            assert!(progress.is_empty());
        }
        seen.extend(progress);
    }
    assert!(nodes[1].is_complete());
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
    assert_eq!(seen.last(), Some(&64));
}

#[test]
fn a_datagram_lost_mid_transfer_is_resent_after_a_round_trip_not_a_timeout() {
    let data = content(512 * 1024);
    let mut nodes = pair(&data, 1024, EngineConfig::default());
    let mut net = Net::new(Duration::from_millis(20), 0, 7);
    let limit = Time::from_millis(60_000);
    let mut now = run(&mut nodes, &mut net, limit, |n| {
        n[1].have().count_filled() >= 128
    });
    assert_eq!(nodes[0].stats().retransmissions, 0);
    net.drop_next_from = Some(0);
    let dropped_at = now;
    while nodes[0].stats().retransmissions == 0 && now < limit {
        now = net.run(&mut nodes, now + Duration::from_millis(1), |_| false);
    }
    // Later DATA is acknowledged a round trip (40 ms) after it was sent: the lost one is
    // overdue then, a quarter round trip later, where the retransmission timeout (the round
    // trip and four times libswift's 50 ms deviation floor) would wait 240 ms.
    let waited = now.saturating_since(dropped_at);
    assert!(
        waited >= Duration::from_millis(40) && waited <= Duration::from_millis(80),
        "resent {waited:?} after the loss"
    );
    let end = net.run(&mut nodes, limit, |n| n[1].is_complete());
    assert!(nodes[1].is_complete(), "stuck at {end:?}");
    assert_eq!(nodes[1].store().bytes(), &data[..]);
}

#[test]
fn completes_through_five_percent_loss_without_double_counting() {
    let data = content(200 * 1024);
    let mut nodes = pair(&data, 1024, EngineConfig::default());
    let mut net = Net::new(Duration::from_millis(20), 50, 7);
    let end = run(&mut nodes, &mut net, Time::from_millis(300_000), |n| {
        n[1].is_complete()
    });
    assert!(
        nodes[1].is_complete(),
        "incomplete at {end:?}: {:?}",
        nodes[1].stats()
    );
    assert_eq!(nodes[1].store().bytes(), &data[..]);
    assert!(net.dropped > 0);
    let leecher = nodes[1].stats();
    // Every chunk counted once, however often it came.
    assert_eq!(leecher.bytes_downloaded, data.len() as u64);
    assert_eq!(leecher.chunks_verified, 200);
    assert!(
        nodes[0].stats().retransmissions > 0,
        "loss must cause retransmissions"
    );
}

#[test]
fn a_late_leecher_completes_from_another_leecher_after_the_seeder_leaves() {
    let data = content(150 * 1024);
    let tree = MerkleTree::from_content(HashAlgorithm::Sha1, 1024, &data).unwrap();
    let mut nodes = pair(&data, 1024, EngineConfig::default());
    nodes.push(leecher(&tree, 3));
    let mut net = Net::new(Duration::from_millis(5), 0, 3);
    let t = run(&mut nodes, &mut net, Time::from_millis(60_000), |n| {
        n[1].is_complete()
    });
    assert!(nodes[1].is_complete());
    // The seeder leaves; node 2 knows only node 1.
    net.cut.push(0);
    nodes[1].peer_lost(&0);
    nodes[2].connect(1, t);
    let end = run_from(t, &mut nodes, &mut net, t + Duration::from_secs(60), |n| {
        n[2].is_complete()
    });
    assert!(nodes[2].is_complete(), "at {end:?}: {:?}", nodes[2].stats());
    assert_eq!(nodes[2].store().bytes(), &data[..]);
    assert_eq!(nodes[1].stats().bytes_uploaded, data.len() as u64);
}

#[test]
fn explicit_close_ends_the_channel_on_both_sides() {
    let data = content(20 * 1024);
    let mut nodes = pair(&data, 1024, EngineConfig::default());
    let mut net = Net::new(Duration::from_millis(5), 0, 4);
    let t = run(&mut nodes, &mut net, Time::from_millis(10_000), |n| {
        n[1].is_complete()
    });
    events(&mut nodes[0]);
    nodes[1].close(&0);
    run_from(t, &mut nodes, &mut net, t + Duration::from_secs(1), |_| {
        false
    });
    assert_eq!(nodes[1].peers().count(), 0);
    assert_eq!(nodes[0].peers().count(), 0);
    assert!(events(&mut nodes[0]).contains(&Event::PeerClosed {
        peer: 1,
        reason: ppspp::engine::CloseReason::ClosedByPeer
    }));
}

#[test]
fn idle_channels_keep_alive_and_silent_peers_are_declared_dead() {
    let data = content(20 * 1024);
    let mut nodes = pair(&data, 1024, EngineConfig::default());
    let mut net = Net::new(Duration::from_millis(5), 0, 5);
    let t = run(&mut nodes, &mut net, Time::from_millis(10_000), |n| {
        n[1].is_complete()
    });
    // Ten idle minutes: keep-alives only, the channel stays up.
    let sent = nodes[0].stats().datagrams_sent;
    let uploaded = nodes[0].stats().bytes_uploaded;
    let t = run_from(
        t,
        &mut nodes,
        &mut net,
        t + Duration::from_secs(600),
        |_| false,
    );
    assert_eq!(nodes[1].peers().count(), 1, "idle but alive");
    // Both ends of an idle channel say so, including the leecher that never sent DATA.
    for n in [0, 1] {
        assert_eq!(
            nodes[n].channel_stats()[0].send_state,
            ppspp::engine::SendState::KeepAlive,
            "node {n}"
        );
    }
    let keepalives = nodes[0].stats().datagrams_sent - sent;
    assert!(
        (5..=60).contains(&keepalives),
        "{keepalives} keep-alives in 10 min"
    );
    assert_eq!(
        nodes[0].stats().bytes_uploaded,
        uploaded,
        "no data while idle"
    );
    // The seeder vanishes: after three minutes of silence the leecher gives up on it.
    net.cut.push(0);
    events(&mut nodes[1]);
    run_from(
        t,
        &mut nodes,
        &mut net,
        t + Duration::from_secs(400),
        |_| false,
    );
    assert_eq!(nodes[1].peers().count(), 0);
    assert!(events(&mut nodes[1]).contains(&Event::PeerClosed {
        peer: 0,
        reason: ppspp::engine::CloseReason::Timeout
    }));
}

#[test]
fn a_handshake_for_another_swarm_goes_unanswered() {
    let data = content(20 * 1024);
    let other = MerkleTree::from_content(HashAlgorithm::Sha1, 1024, &content(30 * 1024)).unwrap();
    let mut nodes = pair(&data, 1024, EngineConfig::default());
    nodes[1] = leecher(&other, 9);
    nodes[1].connect(0, Time::ZERO);
    let mut net = Net::new(Duration::from_millis(5), 0, 6);
    run(&mut nodes, &mut net, Time::from_millis(60_000), |_| false);
    assert_eq!(nodes[0].peers().count(), 0);
    let ev = events(&mut nodes[1]);
    assert!(
        ev.contains(&Event::PeerClosed {
            peer: 0,
            reason: ppspp::engine::CloseReason::Unreachable
        }),
        "{ev:?}"
    );
    assert!(nodes[0].stats().datagrams_dropped >= 5);
}

#[test]
fn the_engine_accepts_no_more_peers_than_configured() {
    let data = content(20 * 1024);
    let tree = MerkleTree::from_content(HashAlgorithm::Sha1, 1024, &data).unwrap();
    let mut nodes = pair(
        &data,
        1024,
        EngineConfig {
            max_peers: 2,
            ..EngineConfig::default()
        },
    );
    for seed in 3..6 {
        let mut l = leecher(&tree, seed);
        l.connect(0, Time::ZERO);
        nodes.push(l);
    }
    let mut net = Net::new(Duration::from_millis(5), 0, 7);
    run(&mut nodes, &mut net, Time::from_millis(5_000), |_| false);
    assert_eq!(nodes[0].peers().count(), 2);
}

#[test]
fn urgent_vod_requests_raise_the_channel_priority_until_served() {
    let data = content(64 * 1024);
    let tree = MerkleTree::from_content(HashAlgorithm::Sha1, 1024, &data).unwrap();
    let mut nodes = pair(&data, 1024, EngineConfig::default());
    nodes[1] = Engine::new(
        EngineConfig {
            seed: 2,
            picker: ppspp::engine::PickerKind::Vod { window: 8 },
            urgent_priority: Some(2),
            ..EngineConfig::default()
        },
        info(&tree),
        MemoryStore::new(data.len(), 1024),
        Time::ZERO,
    )
    .unwrap();
    nodes[1].connect(0, Time::ZERO);
    let mut net = Net::new(Duration::from_millis(50), 0, 8);
    // Just after the handshake the first requests (the playhead window) are urgent.
    let t = run(&mut nodes, &mut net, Time::from_millis(10_000), |n| {
        n[1].channel_stats()
            .iter()
            .any(|c| c.requests_outstanding > 0)
    });
    assert_eq!(nodes[1].channel_stats()[0].priority, 2, "at {t:?}");
    let t = run_from(t, &mut nodes, &mut net, Time::from_millis(60_000), |n| {
        n[1].is_complete()
    });
    assert!(nodes[1].is_complete());
    // Complete: nothing urgent is outstanding, so the next pass restores the priority.
    nodes[1].handle_timeout(t);
    assert_eq!(nodes[1].channel_stats()[0].requests_outstanding, 0);
    assert_eq!(nodes[1].channel_stats()[0].priority, 0);
}

#[test]
fn stats_events_come_at_the_configured_interval() {
    let data = content(32 * 1024);
    let mut nodes = pair(
        &data,
        1024,
        EngineConfig {
            stats_interval: Some(Duration::from_secs(1)),
            ..EngineConfig::default()
        },
    );
    let mut net = Net::new(Duration::from_millis(5), 0, 9);
    run(&mut nodes, &mut net, Time::from_millis(10_500), |_| false);
    let stats: Vec<_> = events(&mut nodes[1])
        .into_iter()
        .filter_map(|e| match e {
            Event::Stats(s) => Some(s),
            _ => None,
        })
        .collect();
    assert_eq!(stats.len(), 10, "one per second for 10.5 s");
    assert_eq!(stats.last().unwrap().chunks_have, 32);
    assert_eq!(stats.last().unwrap().peers, 1);
}

#[test]
fn a_lost_handshake_answer_is_repeated_with_its_haves() {
    let data = content(50 * 1024);
    let mut nodes = pair(&data, 1024, EngineConfig::default());
    let mut net = Net::new(Duration::from_millis(20), 0, 10);
    net.drop_next_from = Some(0);
    let end = run(&mut nodes, &mut net, Time::from_millis(30_000), |n| {
        n[1].is_complete()
    });
    assert!(
        nodes[1].is_complete(),
        "stalled at {end:?}: {:?}",
        nodes[1].channel_stats()
    );
    assert_eq!(net.dropped, 1);
}

#[test]
fn a_rejected_chunk_is_fetched_again_from_an_honest_peer() {
    let data = content(64 * 1024);
    let tree = MerkleTree::from_content(HashAlgorithm::Sha1, 1024, &data).unwrap();
    let mut nodes = pair(&data, 1024, EngineConfig::default());
    // Node 2: a second seeder whose DATA is corrupted on the way.
    nodes.push(seeder(&tree, &data, 5));
    nodes[1].connect(2, Time::ZERO);
    let mut net = Net::new(Duration::from_millis(5), 0, 11);
    net.corrupt_from = Some(2);
    let end = run(&mut nodes, &mut net, Time::from_millis(60_000), |n| {
        n[1].is_complete()
    });
    assert!(
        nodes[1].is_complete(),
        "stuck at {end:?}: {:?}",
        nodes[1].stats()
    );
    assert_eq!(nodes[1].store().bytes(), &data[..]);
    let ev = events(&mut nodes[1]);
    assert!(
        ev.iter()
            .any(|e| matches!(e, Event::ChunkRejected { from: 2, .. }))
    );
    assert!(ev.iter().any(|e| matches!(
        e,
        Event::PeerClosed {
            peer: 2,
            reason: ppspp::engine::CloseReason::Misbehaving(_)
        }
    )));
}

/// 300 KiB in 1 KiB chunks over a 30 ms path with `config`'s rate limits on both sides:
/// how long it took, in seconds, and how many wake-ups sent nothing.
fn rate_limited_transfer(config: EngineConfig, net_seed: u64) -> (f64, u64) {
    let data = content(300 * 1024);
    let mut nodes = pair(&data, 1024, config);
    let mut net = Net::new(Duration::from_millis(30), 0, net_seed);
    let end = run(&mut nodes, &mut net, Time::from_millis(60_000), |n| {
        n[1].is_complete()
    });
    assert!(nodes[1].is_complete(), "at {end:?}: {:?}", nodes[1].stats());
    (end.as_micros() as f64 / 1e6, net.idle_wakeups)
}

#[test]
fn a_rate_limited_seeder_holds_its_rate_and_is_not_taken_for_a_withholder() {
    let (secs, idle_wakeups) = rate_limited_transfer(
        EngineConfig {
            upload_limit: Some(50_000),
            ..EngineConfig::default()
        },
        12,
    );
    // 307 200 bytes at 50 000 B/s is 6.1 s (plus the initial burst allowance).
    assert!((5.5..7.0).contains(&secs), "took {secs} s");
    // Waits for the limit and for pacing end together: each wake-up sends.
    assert!(idle_wakeups < 10, "{idle_wakeups} wake-ups sent nothing");
}

#[test]
fn a_download_limited_leecher_wakes_only_to_ask() {
    let (secs, idle_wakeups) = rate_limited_transfer(
        EngineConfig {
            download_limit: Some(50_000),
            ..EngineConfig::default()
        },
        13,
    );
    assert!((5.0..7.5).contains(&secs), "took {secs} s");
    // The limit admits a chunk at a time: at most a wake-up per chunk to ask for it (its
    // REQUEST may then wait to go with the next ACK), never a spin.
    assert!(idle_wakeups <= 300, "{idle_wakeups} wake-ups sent nothing");
}

#[test]
fn an_origin_serves_only_what_no_other_peer_holds() {
    let data = content(200 * 1024);
    let tree = MerkleTree::from_content(HashAlgorithm::Sha1, 1024, &data).unwrap();
    let mut nodes = pair(&data, 1024, EngineConfig::default());
    nodes.push(leecher(&tree, 3));
    let mut net = Net::new(Duration::from_millis(5), 0, 4);
    let t = run(&mut nodes, &mut net, Time::from_millis(60_000), |n| {
        n[1].is_complete()
    });
    assert!(nodes[1].is_complete());
    let origin_before = nodes[0].stats().bytes_uploaded;
    // Node 2 knows the origin (node 0) and a complete peer (node 1).
    nodes[2].connect(0, t);
    nodes[2].connect(1, t);
    nodes[2].set_origin(&0, true);
    let end = run_from(t, &mut nodes, &mut net, t + Duration::from_secs(60), |n| {
        n[2].is_complete()
    });
    assert!(nodes[2].is_complete(), "at {end:?}: {:?}", nodes[2].stats());
    assert_eq!(nodes[2].store().bytes(), &data[..]);
    let from_origin = nodes[0].stats().bytes_uploaded - origin_before;
    assert_eq!(from_origin, 0, "the other peer held everything");

    // Alone with the origin, a leecher gets everything from it.
    let mut nodes = pair(&data, 1024, EngineConfig::default());
    nodes[1].set_origin(&0, true);
    let mut net = Net::new(Duration::from_millis(5), 0, 5);
    run(&mut nodes, &mut net, Time::from_millis(60_000), |n| {
        n[1].is_complete()
    });
    assert!(nodes[1].is_complete(), "{:?}", nodes[1].stats());
    assert_eq!(nodes[1].store().bytes(), &data[..]);
}

#[test]
fn a_peer_that_vanishes_holding_requests_is_dropped_and_its_chunks_fetched_elsewhere() {
    let data = content(400 * 1024);
    let tree = MerkleTree::from_content(HashAlgorithm::Sha1, 1024, &data).unwrap();
    let mut nodes = pair(&data, 1024, EngineConfig::default());
    nodes.push(leecher(&tree, 3));
    let mut net = Net::new(Duration::from_millis(5), 0, 6);
    let t = run(&mut nodes, &mut net, Time::from_millis(60_000), |n| {
        n[1].is_complete()
    });
    // Node 2 asks the seeder (0) and a complete peer (1); node 1 vanishes without a close
    // (its process died, say) just after the first requests went out.
    nodes[2].connect(0, t);
    nodes[2].connect(1, t);
    let t = run_from(
        t,
        &mut nodes,
        &mut net,
        t + Duration::from_millis(30),
        |_| false,
    );
    net.cut.push(1);
    let end = run_from(t, &mut nodes, &mut net, t + Duration::from_secs(60), |n| {
        n[2].is_complete()
    });
    assert!(nodes[2].is_complete(), "at {end:?}: {:?}", nodes[2].stats());
    assert_eq!(nodes[2].store().bytes(), &data[..]);
    // Well before the RFC's three-minute dead-peer rule.
    assert!(
        end.saturating_since(t) < Duration::from_secs(25),
        "took {:?}",
        end.saturating_since(t)
    );
}

/// Bytes of a datagram before its first INTEGRITY or DATA: its control messages.
fn control_len(bytes: &[u8]) -> usize {
    let Ok(d) = ppspp::codec::decode_datagram(bytes, &ppspp::codec::CodecConfig::default()) else {
        return bytes.len();
    };
    let mut messages = d.messages();
    loop {
        let at = messages.offset();
        match messages.next() {
            Some(Ok(Message::Integrity { .. } | Message::Data { .. })) => return at,
            Some(Ok(_)) => {}
            _ => return bytes.len(),
        }
    }
}

#[test]
fn control_messages_stay_within_the_mtu_and_only_data_goes_beyond() {
    // The leecher takes in each round's whole window before it answers, so ACKs pile up
    // well past one MTU's worth.
    const MTU: usize = 576;
    let data = content(400 * 1024);
    let mut nodes = pair(
        &data,
        1024,
        EngineConfig {
            mtu: MTU,
            ..EngineConfig::default()
        },
    );
    let (mut near, mut rounds) = (0, 0);
    let mut now = Time::ZERO;
    while !nodes[1].is_complete() {
        rounds += 1;
        assert!(rounds < 20_000, "stuck");
        now += Duration::from_millis(2);
        let batch: Vec<_> = std::iter::from_fn(|| poll(&mut nodes[0], now)).collect();
        for t in batch {
            nodes[1].handle_datagram(now, 0, &t.payload);
        }
        while let Some(t) = poll(&mut nodes[1], now) {
            let control = control_len(&t.payload);
            assert!(control <= MTU, "{control} bytes of control messages");
            near += usize::from(control > MTU - 64);
            nodes[0].handle_datagram(now, 1, &t.payload);
        }
        for n in nodes.iter_mut() {
            if n.poll_timeout().is_some_and(|t| t <= now) {
                n.handle_timeout(now);
            }
        }
    }
    assert_eq!(nodes[1].store().bytes(), &data[..]);
    assert!(near > 0, "the MTU never bound: the test proves nothing");
}

#[test]
fn connect_says_what_it_did() {
    let data = content(8 * 1024);
    let mut nodes = pair(
        &data,
        1024,
        EngineConfig {
            max_peers: 2,
            ..EngineConfig::default()
        },
    );
    // `pair` connected the leecher to the seeder.
    assert_eq!(nodes[1].connect(0, Time::ZERO), Connect::AlreadyConnected);
    assert_eq!(nodes[1].connect(7, Time::ZERO), Connect::Started);
    assert_eq!(nodes[1].connect(8, Time::ZERO), Connect::Full);
}

#[test]
fn two_origins_and_no_other_peer_still_serve_everything() {
    // Each origin defers to "other peers" that hold a chunk; another origin is not one.
    let data = content(64 * 1024);
    let tree = MerkleTree::from_content(HashAlgorithm::Sha1, 1024, &data).unwrap();
    let mut nodes = vec![
        seeder(&tree, &data, 1),
        seeder(&tree, &data, 2),
        leecher(&tree, 3),
    ];
    nodes[2].connect(0, Time::ZERO);
    nodes[2].connect(1, Time::ZERO);
    nodes[2].set_origin(&0, true);
    nodes[2].set_origin(&1, true);
    let mut net = Net::new(Duration::from_millis(5), 0, 14);
    let end = run(&mut nodes, &mut net, Time::from_millis(60_000), |n| {
        n[2].is_complete()
    });
    assert!(nodes[2].is_complete(), "stuck at {end:?}");
    assert_eq!(nodes[2].store().bytes(), &data[..]);
}

#[test]
fn a_full_seeder_refuses_and_the_refused_come_back_once_there_is_room() {
    let data = content(48 * 1024);
    let tree = MerkleTree::from_content(HashAlgorithm::Sha1, 1024, &data).unwrap();
    // The seeder has room for one peer; two leechers knock at once: both handshakes are
    // answered, and the one whose next datagram finds the slot taken is refused then.
    let mut nodes = pair(
        &data,
        1024,
        EngineConfig {
            max_peers: 1,
            ..EngineConfig::default()
        },
    );
    let mut second = leecher(&tree, 3);
    second.connect(0, Time::ZERO);
    nodes.push(second);
    let mut net = Net::new(Duration::from_millis(10), 0, 11);
    let t = run(&mut nodes, &mut net, Time::from_millis(500), |_| false);
    let refused = |ev: &[Event<u32>]| {
        ev.contains(&Event::PeerClosed {
            peer: 0,
            reason: ppspp::engine::CloseReason::Refused,
        })
    };
    let (ev1, ev2) = (events(&mut nodes[1]), events(&mut nodes[2]));
    assert!(
        refused(&ev1) != refused(&ev2),
        "exactly one refused: {ev1:?} / {ev2:?}"
    );
    let (winner, loser) = if refused(&ev1) { (2, 1) } else { (1, 2) };
    assert!(nodes[loser].redialing());
    // A third knocks while the seeder is full: refused at its opening handshake.
    let mut third = leecher(&tree, 4);
    third.connect(0, t);
    nodes.push(third);
    let t = run_from(
        t,
        &mut nodes,
        &mut net,
        t + Duration::from_millis(500),
        |_| false,
    );
    assert!(refused(&events(&mut nodes[3])));
    assert!(nodes[3].redialing());
    // What an operator's metrics count: the loser's second datagram and the third's
    // opening handshake.
    assert!(
        nodes[0].stats().handshakes_refused >= 2,
        "{:?}",
        nodes[0].stats()
    );
    assert_eq!(nodes[winner].stats().handshakes_refused, 0);
    // The winner completes and leaves; the others, asking again, get the slot in turn.
    let t = run_from(t, &mut nodes, &mut net, Time::from_millis(60_000), |n| {
        n[winner].is_complete()
    });
    nodes[winner].close_all();
    let others = [loser, 3];
    let t = run_from(t, &mut nodes, &mut net, t + Duration::from_secs(120), |n| {
        others.iter().any(|&i| n[i].is_complete())
    });
    let first_done = *others.iter().find(|&&i| nodes[i].is_complete()).unwrap();
    nodes[first_done].close_all();
    run_from(t, &mut nodes, &mut net, t + Duration::from_secs(120), |n| {
        others.iter().all(|&i| n[i].is_complete())
    });
    for i in [1, 2, 3] {
        assert!(
            nodes[i].is_complete(),
            "leecher {i}: {:?}",
            nodes[i].stats()
        );
        assert_eq!(nodes[i].store().bytes(), &data[..]);
        assert!(!nodes[i].redialing(), "a complete peer asks nobody again");
        let misbehaving = events(&mut nodes[i]).into_iter().any(|e| {
            matches!(
                e,
                Event::PeerClosed {
                    reason: ppspp::engine::CloseReason::Misbehaving(_),
                    ..
                }
            )
        });
        assert!(!misbehaving, "leecher {i} took the full seeder for a cheat");
    }
}

/// Whether `bytes` is a close handshake (how a full peer refuses).
fn is_close(bytes: &[u8]) -> bool {
    let codec = ppspp::codec::CodecConfig::default();
    ppspp::codec::decode_datagram(bytes, &codec).is_ok_and(
        |d| matches!(d.messages().next(), Some(Ok(Message::Handshake(h))) if h.is_close()),
    )
}

#[test]
fn a_lost_refusal_is_said_again_and_the_full_seeder_is_not_banned() {
    let data = content(48 * 1024);
    let tree = MerkleTree::from_content(HashAlgorithm::Sha1, 1024, &data).unwrap();
    let mut nodes = pair(
        &data,
        1024,
        EngineConfig {
            max_peers: 1,
            ..EngineConfig::default()
        },
    );
    let mut second = leecher(&tree, 3);
    second.connect(0, Time::ZERO);
    nodes.push(second);
    let mut net = Net::new(Duration::from_millis(10), 0, 11);
    // The seeder's first close (a refusal when the loser's next datagram comes) is lost.
    let mut lost = false;
    net.rewrite.insert(
        0,
        Box::new(move |b: &[u8]| {
            if !lost && is_close(b) {
                lost = true;
                return vec![0xff; 4]; // to a channel nobody has
            }
            b.to_vec()
        }),
    );
    run(&mut nodes, &mut net, Time::from_millis(30_000), |_| false);
    let (ev1, ev2) = (events(&mut nodes[1]), events(&mut nodes[2]));
    let refused = |ev: &[Event<u32>]| {
        ev.contains(&Event::PeerClosed {
            peer: 0,
            reason: ppspp::engine::CloseReason::Refused,
        })
    };
    let banned = |ev: &[Event<u32>]| {
        ev.iter().any(|e| {
            matches!(
                e,
                Event::PeerClosed {
                    reason: ppspp::engine::CloseReason::Misbehaving(_),
                    ..
                }
            )
        })
    };
    assert!(refused(&ev1) || refused(&ev2), "{ev1:?} / {ev2:?}");
    assert!(!banned(&ev1) && !banned(&ev2), "{ev1:?} / {ev2:?}");
}

#[test]
fn a_goodbye_after_keep_alives_is_not_taken_for_a_refusal() {
    // Two seeders without peer exchange: nothing to exchange, so after the answer only
    // keep-alives flow.
    let data = content(8 * 1024);
    let quiet = EngineConfig {
        pex: false,
        ..EngineConfig::default()
    };
    let mut nodes = pair(&data, 1024, quiet.clone());
    let tree = MerkleTree::from_content(HashAlgorithm::Sha1, 1024, &data).unwrap();
    nodes[1] = Engine::new_seeder(
        EngineConfig { seed: 2, ..quiet },
        &tree,
        MemoryStore::with_content(data.clone(), 1024),
        Time::ZERO,
    )
    .unwrap();
    nodes[1].connect(0, Time::ZERO);
    let mut net = Net::new(Duration::from_millis(10), 0, 12);
    let t = run(&mut nodes, &mut net, Time::from_millis(10_000), |_| false);
    assert!(events(&mut nodes[1]).contains(&Event::PeerConnected { peer: 0 }));
    nodes[0].close_all();
    run_from(t, &mut nodes, &mut net, t + Duration::from_secs(2), |_| {
        false
    });
    let ev = events(&mut nodes[1]);
    assert!(
        ev.contains(&Event::PeerClosed {
            peer: 0,
            reason: ppspp::engine::CloseReason::ClosedByPeer
        }),
        "{ev:?}"
    );
}

#[test]
fn an_origin_is_not_asked_for_what_a_peer_got_meanwhile() {
    // Four video players start at once with an origin and each other, and ask the origin
    // for chunks nobody holds yet, often the same ones. Once a player announces a chunk,
    // the others cancel it at the origin and ask that player instead.
    let data = content(1024 * 1024);
    let tree = MerkleTree::from_content(HashAlgorithm::Sha1, 1024, &data).unwrap();
    let vod = |seed| EngineConfig {
        seed,
        picker: ppspp::engine::PickerKind::Vod { window: 32 },
        ..EngineConfig::default()
    };
    // The origin's upload is the scarce one, as a server's share of a swarm is.
    let origin = Engine::new_seeder(
        EngineConfig {
            upload_limit: Some(400_000),
            ..vod(1)
        },
        &tree,
        MemoryStore::with_content(data.clone(), 1024),
        Time::ZERO,
    )
    .unwrap();
    let mut nodes = vec![origin];
    for i in 1..=4u32 {
        let mut n = leecher_with(&tree, vod(u64::from(i) + 1));
        n.connect(0, Time::ZERO);
        n.set_origin(&0, true);
        for j in 1..i {
            n.connect(j, Time::ZERO);
        }
        nodes.push(n);
    }
    let mut net = Net::new(Duration::from_millis(5), 0, 21);
    let end = run(&mut nodes, &mut net, Time::from_millis(120_000), |n| {
        n[1..].iter().all(Node::is_complete)
    });
    for n in &nodes[1..] {
        assert!(n.is_complete(), "stuck at {end:?}: {:?}", n.stats());
        assert_eq!(n.store().bytes(), &data[..]);
    }
    // Without the hand-over the origin sent 2.2 times the content here.
    let ratio = nodes[0].stats().bytes_uploaded as f64 / data.len() as f64;
    assert!(ratio < 1.6, "the origin sent {ratio:.2}× the content");
}

/// Leecher-to-seeder datagrams and the ACK messages in them, over a whole download with
/// `config`; with the download's end time and the seeder's retransmissions.
fn upstream_datagrams(config: EngineConfig) -> (u64, u64, Time, u64) {
    use std::cell::Cell;
    use std::rc::Rc;
    let data = content(256 * 1024);
    let mut nodes = pair(&data, 1024, config);
    let mut net = Net::new(Duration::from_millis(20), 0, 7);
    let counts = Rc::new(Cell::new((0u64, 0u64)));
    let seen = Rc::clone(&counts);
    net.observer = Some(Box::new(move |from, _to, bytes: &[u8]| {
        if from != 1 {
            return;
        }
        let config = ppspp::codec::CodecConfig::default();
        let acks = ppspp::codec::decode_datagram(bytes, &config).map_or(0, |d| {
            d.messages()
                .filter(|m| matches!(m, Ok(Message::Ack { .. })))
                .count() as u64
        });
        let (datagrams, all) = seen.get();
        seen.set((datagrams + 1, all + acks));
    }));
    let end = run(&mut nodes, &mut net, Time::from_millis(60_000), |n| {
        n[1].is_complete()
    });
    assert_eq!(nodes[1].store().bytes(), &data[..]);
    // Let the last ACKs arrive.
    net.run(&mut nodes, end + Duration::from_secs(1), |_| false);
    let (datagrams, acks) = counts.get();
    (datagrams, acks, end, nodes[0].stats().retransmissions)
}

#[test]
fn acknowledgements_wait_for_company_but_never_past_the_ack_delay() {
    let chunks = 256;
    let (eager, eager_acks, eager_end, eager_resent) = upstream_datagrams(EngineConfig {
        ack_every: 1,
        max_ack_delay: Duration::ZERO,
        ..EngineConfig::default()
    });
    let (delayed, delayed_acks, delayed_end, delayed_resent) =
        upstream_datagrams(EngineConfig::default());
    // Acknowledging every chunk at once sends about a datagram per chunk: the comparison
    // below means something.
    assert!(
        eager >= chunks * 9 / 10,
        "{eager} datagrams for {chunks} chunks"
    );
    assert!(
        delayed * 10 <= eager * 6,
        "{delayed} datagrams with delayed ACKs, {eager} without"
    );
    // Every chunk is still acknowledged (the odd last one after the delay): nothing is
    // sent twice, and the download takes hardly longer (slow start grows the window a
    // little later when half the ACKs come a chunk's time later).
    assert!(eager_acks >= chunks && delayed_acks >= chunks);
    assert_eq!((eager_resent, delayed_resent), (0, 0));
    assert!(
        delayed_end.as_micros() <= eager_end.as_micros() * 115 / 100,
        "{delayed_end:?} against {eager_end:?}"
    );
}

#[test]
fn nothing_waits_on_the_ack_delay_while_chunks_keep_coming() {
    // No time passes at all: whatever goes out must go because of what arrived. A sender's
    // first chunk goes alone and waits for its ACK, and a REQUEST held for company while
    // the peer has nothing else of ours to send would idle it, so a download that needs
    // the delay timer stalls here.
    let data = content(100 * 1024);
    let mut nodes = pair(&data, 1024, EngineConfig::default());
    let now = Time::from_millis(5);
    for _ in 0..10_000 {
        let mut moved = false;
        for from in 0..2 {
            let batch: Vec<_> = std::iter::from_fn(|| poll(&mut nodes[from], now)).collect();
            for t in batch {
                moved = true;
                nodes[1 - from].handle_datagram(now, from as u32, &t.payload);
            }
        }
        if !moved {
            break;
        }
    }
    assert!(nodes[1].is_complete(), "{:?}", nodes[1].stats());
    assert_eq!(nodes[1].store().bytes(), &data[..]);
}

/// A seeder, a leecher fetching from it and a second leecher fetching from the first only:
/// the first leecher's datagrams to the second that carry nothing but HAVEs, all of them,
/// and when the second completed.
fn have_only_datagrams(config: EngineConfig) -> (u64, u64, Time) {
    use std::cell::Cell;
    use std::rc::Rc;
    let data = content(256 * 1024);
    let mut nodes = pair(&data, 1024, config.clone());
    let tree = MerkleTree::from_content(HashAlgorithm::Sha1, 1024, &data).unwrap();
    let mut second = leecher_with(&tree, EngineConfig { seed: 3, ..config });
    second.connect(1, Time::ZERO);
    nodes.push(second);
    let mut net = Net::new(Duration::from_millis(10), 0, 11);
    let counts = Rc::new(Cell::new((0u64, 0u64)));
    let seen = Rc::clone(&counts);
    net.observer = Some(Box::new(move |from, to, bytes: &[u8]| {
        if (from, to) != (1, 2) {
            return;
        }
        let config = ppspp::codec::CodecConfig::default();
        let only_haves = ppspp::codec::decode_datagram(bytes, &config).is_ok_and(|d| {
            let mut messages = d.messages().peekable();
            messages.peek().is_some() && messages.all(|m| matches!(m, Ok(Message::Have(_))))
        });
        let (haves, all) = seen.get();
        seen.set((haves + u64::from(only_haves), all + 1));
    }));
    let end = run(&mut nodes, &mut net, Time::from_millis(60_000), |n| {
        n[2].is_complete()
    });
    assert_eq!(
        nodes[2].store().bytes(),
        &data[..],
        "{:?}",
        nodes[2].stats()
    );
    let (haves, all) = counts.get();
    (haves, all, end)
}

#[test]
fn haves_wait_for_company_but_never_past_the_have_delay() {
    let (eager, eager_all, eager_end) = have_only_datagrams(EngineConfig {
        max_have_delay: Duration::ZERO,
        ..EngineConfig::default()
    });
    let (held, held_all, held_end) = have_only_datagrams(EngineConfig::default());
    // Announcing every chunk at once sends many datagrams of HAVEs alone: the comparison
    // below means something.
    assert!(
        eager >= 64,
        "{eager} of {eager_all} datagrams were HAVEs alone"
    );
    assert!(
        held * 4 <= eager,
        "{held} HAVE-only datagrams held for company, {eager} not"
    );
    assert!(
        held_all < eager_all,
        "{held_all} datagrams in all, {eager_all}"
    );
    // The second leecher still learns of every chunk in time to fetch it.
    assert!(
        held_end.as_micros() <= eager_end.as_micros() * 12 / 10,
        "{held_end:?} against {eager_end:?}"
    );
}

/// Datagrams with a HAVE that a leecher sends two seeders while fetching from both over a
/// path that loses 15 % of datagrams each way, and the leecher's content.
fn haves_to_seeders_on_a_lossy_path() -> (u64, Vec<u8>, Vec<u8>) {
    use std::cell::Cell;
    use std::rc::Rc;
    let data = content(384 * 1024);
    let tree = MerkleTree::from_content(HashAlgorithm::Sha1, 1024, &data).unwrap();
    let mut nodes: Vec<Node> = (0..2).map(|seed| seeder(&tree, &data, seed)).collect();
    let mut leecher = leecher(&tree, 5);
    leecher.connect(0, Time::ZERO);
    leecher.connect(1, Time::ZERO);
    nodes.push(leecher);
    let mut net = Net::new(Duration::from_millis(20), 150, 17);
    let count = Rc::new(Cell::new(0u64));
    let seen = Rc::clone(&count);
    net.observer = Some(Box::new(move |from, to, bytes: &[u8]| {
        if from != 2 || to > 1 {
            return;
        }
        let config = ppspp::codec::CodecConfig::default();
        let has_have = ppspp::codec::decode_datagram(bytes, &config)
            .is_ok_and(|d| d.messages().any(|m| matches!(m, Ok(Message::Have(_)))));
        seen.set(seen.get() + u64::from(has_have));
    }));
    run(&mut nodes, &mut net, Time::from_millis(120_000), |n| {
        n[2].is_complete()
    });
    (count.get(), nodes[2].store().bytes().to_vec(), data)
}

#[test]
fn lost_requests_do_not_make_a_seeder_a_partial_peer() {
    // Requests lost on the way, twice for one chunk while the other seeder has it too,
    // once made the leecher take a seeder for a peer that let the chunk go: a partial peer,
    // told of every chunk the leecher verified from then on.
    let (haves, got, data) = haves_to_seeders_on_a_lossy_path();
    assert_eq!(got, data);
    assert_eq!(haves, 0, "datagrams with HAVEs sent to seeders");
}

/// The chunks a leecher with RNG seed `leecher_seed` verified, in order, fetching
/// `chunks` 1 KiB chunks from a seeder alone.
fn verified_order(chunks: usize, leecher_seed: u64) -> Vec<u64> {
    let data = content(chunks * 1024);
    let mut nodes = pair(&data, 1024, EngineConfig::default());
    nodes[1] = leecher(
        &MerkleTree::from_content(HashAlgorithm::Sha1, 1024, &data).unwrap(),
        leecher_seed,
    );
    nodes[1].connect(0, Time::ZERO);
    let mut net = Net::new(Duration::from_millis(10), 0, 1);
    run(&mut nodes, &mut net, Time::from_millis(60_000), |n| {
        n[1].is_complete()
    });
    assert!(nodes[1].is_complete());
    events(&mut nodes[1])
        .into_iter()
        .filter_map(|e| match e {
            Event::ChunkVerified { chunk, .. } => Some(chunk),
            _ => None,
        })
        .collect()
}

#[test]
fn a_leecher_fetches_block_by_block_in_an_order_of_its_own() {
    // Aligned blocks of 64 chunks: what the CLI's file store reads and writes at once.
    let block = |c: &u64| c / 64;
    let first = verified_order(1024, 2);
    assert_eq!(first.len(), 1024);
    // Each block is fetched whole before the next but for the few chunks asked for while
    // the last ones of a block were still on their way. Picks scattered over the content
    // switched blocks at about every fourth.
    let switches = first
        .windows(2)
        .filter(|w| block(&w[0]) != block(&w[1]))
        .count();
    assert!(
        switches <= 3 * 16,
        "{switches} block switches for 16 blocks"
    );
    // Another leecher goes through the content in another order (after the first
    // request, which is the content's first chunks for every leecher), so leechers of
    // one swarm hold different chunks to trade.
    let second = verified_order(1024, 3);
    let early = |order: &[u64]| order[..256].iter().copied().collect::<BTreeSet<u64>>();
    let shared = early(&first).intersection(&early(&second)).count();
    assert!(shared < 128, "{shared} of the first 256 chunks in common");
}
