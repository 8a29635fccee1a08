//! A live stream in the simulator: a source signing as it goes (munros of 16 chunks, or
//! every chunk: Sign All), twenty viewers on access links with delay, and a relay that
//! corrupts what it serves. Viewers keep up with the edge, relay to each other, ban the
//! corrupter and store nothing it forged. (Measured
//! here while building it: a median of 0.54 s from the source taking a chunk to a viewer
//! verifying it, 0.71 s with the source serving in request order, and over 3 s with the
//! source serving all twenty viewers at once, its uplink the bottleneck.)

use ppspp::engine::{CloseReason, Engine, Event, LiveInfo, LiveParams, Misbehaviour};
use ppspp::live::{LiveAlgorithm, LiveError, LiveSigningKey, SIGN_ALL};
use ppspp::merkle::HashAlgorithm;
use ppspp::rng::Rng;
use ppspp::time::Time;
use ppspp_sim::adversary::Mutation;
use ppspp_sim::link::LinkConfig;
use ppspp_sim::net::{Network, NodeId, SimEngine};
use ppspp_sim::scenario::config;
use ppspp_sim::store::CheckedStore;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

const CS: usize = 1024;
/// 60 chunks a second (about 0.5 Mbit/s), 3 every 50 ms, for 12 s.
const PER_STEP: u64 = 3;
const STEP: Duration = Duration::from_millis(50);
const CHUNKS: u64 = 720;
const VIEWERS: u32 = 20;

fn params(chunks_per_signature: u64) -> LiveParams {
    LiveParams {
        hash: HashAlgorithm::Sha1,
        chunk_size: CS as u32,
        chunks_per_signature,
        discard_window: 256,
    }
}

#[test]
fn viewers_keep_up_relay_and_ban_a_corrupting_relay() {
    swarm(16, LiveAlgorithm::EcdsaP256Sha256);
}

#[test]
fn under_sign_all_too() {
    swarm(SIGN_ALL, LiveAlgorithm::Ed25519);
}

fn swarm(chunks_per_signature: u64, alg: LiveAlgorithm) {
    let mut rng = Rng::new(5);
    let stream: Arc<Vec<u8>> = Arc::new(
        (0..CHUNKS as usize * CS)
            .map(|_| rng.next_u64() as u8)
            .collect(),
    );
    let key = LiveSigningKey::from_secret(alg, &[11; 32]).unwrap();
    let info = LiveInfo {
        key: key.public_key().clone(),
        params: params(chunks_per_signature),
    };
    let mut net = Network::new(7);
    // The source: 4 Mbit/s up, about eight copies of the stream, serving four viewers at
    // once (the rest get the stream from them).
    let source_link = LinkConfig::new(4_000_000, 64_000);
    let source: SimEngine = Engine::new_live_source(
        ppspp::engine::EngineConfig {
            max_unchoked: 4,
            ..config(1)
        },
        key,
        params(chunks_per_signature),
        CheckedStore::empty(stream.clone(), CS),
        Time::ZERO,
    )
    .unwrap();
    let src = net.add_node(
        Network::peer(source, None),
        source_link.clone(),
        source_link,
        Duration::from_millis(5),
    );
    let viewer = |seed| -> SimEngine {
        Engine::new_live(
            config(seed),
            info.clone(),
            CheckedStore::empty(stream.clone(), CS),
            Time::ZERO,
        )
        .unwrap()
    };
    // Home links: 20 Mbit/s down, 2 Mbit/s up, 10 to 40 ms from the core.
    let down = LinkConfig::new(20_000_000, 100_000);
    let up = LinkConfig::new(2_000_000, 30_000);
    let mut viewers: Vec<NodeId> = Vec::new();
    for i in 0..VIEWERS {
        let delay = Duration::from_millis(10 + u64::from(i) * 3 / 2);
        viewers.push(net.add_node(
            Network::peer(viewer(u64::from(i) + 10), None),
            up.clone(),
            down.clone(),
            delay,
        ));
    }
    let corrupter = net.add_node(
        Network::peer(viewer(99), Some(Mutation::CorruptData)),
        up.clone(),
        down,
        Duration::from_millis(10),
    );
    // Everyone meets the source, the corrupter and four other viewers.
    for (i, &v) in viewers.iter().enumerate() {
        net.with_engine(v, |e, now| {
            e.connect(src, now);
            e.connect(corrupter, now);
            for k in 1..=4 {
                e.connect(viewers[(i + k * 3) % viewers.len()], now);
            }
        });
    }
    net.with_engine(corrupter, |e, now| e.connect(src, now));

    // The stream: when each chunk went in.
    let mut pushed_at: BTreeMap<u64, Time> = BTreeMap::new();
    let mut next = 0u64;
    while next < CHUNKS {
        for _ in 0..PER_STEP {
            let at = next as usize * CS;
            let data = stream[at..at + CS].to_vec();
            let c = net
                .with_engine(src, |e, now| e.push_live_chunk(&data, now))
                .unwrap();
            pushed_at.insert(c, net.now);
            next += 1;
        }
        let until = Time::from_micros(net.now.as_micros() + STEP.as_micros() as u64);
        net.run_until(until);
    }
    net.run_until(Time::from_micros(net.now.as_micros() + 2_000_000));

    let edge = net.engine(src).live_edge().unwrap();
    assert_eq!(edge, CHUNKS);
    let mut delays: Vec<Duration> = Vec::new();
    let mut banned_by = 0;
    for &v in &viewers {
        let peer = net.peer_ref(v);
        let e = &peer.engine;
        assert_eq!(
            e.store().corrupt_writes,
            0,
            "viewer {v} stored a forged chunk"
        );
        assert!(
            e.live_edge().unwrap() + 16 >= edge,
            "viewer {v} fell behind: {:?}",
            e.live_edge()
        );
        assert!(
            e.stats().chunks_have <= 256,
            "viewer {v} holds more than its window"
        );
        for (t, ev) in &peer.events {
            match ev {
                Event::ChunkVerified { chunk, .. } => {
                    if let Some(p) = pushed_at.get(chunk) {
                        delays.push(t.saturating_since(*p));
                    }
                }
                // Under Sign All the signature covers the bytes: it is what fails.
                Event::PeerClosed {
                    peer,
                    reason:
                        CloseReason::Misbehaving(Misbehaviour::Live(
                            LiveError::Mismatch(_) | LiveError::BadSignature(_),
                        )),
                } if *peer == corrupter => banned_by += 1,
                _ => {}
            }
        }
    }
    assert!(banned_by > 0, "nobody banned the corrupting relay");
    delays.sort();
    let median = delays[delays.len() / 2];
    // Most chunks come within a munro's time (16 chunks, 270 ms; none under Sign All) and
    // a few hops.
    assert!(
        median < Duration::from_millis(800),
        "median delay {median:?}"
    );
    // The viewers fed each other: the source sent less than they received.
    let received: u64 = viewers
        .iter()
        .map(|&v| net.engine(v).stats().bytes_downloaded)
        .sum();
    let sent = net.engine(src).stats().bytes_uploaded;
    assert!(
        (sent as f64) < 0.7 * received as f64,
        "the source sent {sent} bytes of the {received} the viewers received"
    );
}
