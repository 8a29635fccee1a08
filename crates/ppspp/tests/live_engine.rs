//! Live streams through real engines (RFC 7574 §6.1): a source signing munros (or, Sign
//! All, every chunk), viewers tuning in at the edge and relaying, the discard window, and
//! peers that forge. Time is simulated, so every test is deterministic and bounded.

use crate::common;

use common::engines::events;
use common::virtual_net::{Rewrite, VirtualNet};
use ppspp::codec::{
    ChunkAddressing, ChunkSpec, CodecConfig, DatagramBuilder, Message, decode_datagram,
};
use ppspp::engine::{CloseReason, Engine, EngineConfig, Event, LiveInfo, LiveParams, Misbehaviour};
use ppspp::live::{LiveAlgorithm, LiveError, LiveSigningKey, SIGN_ALL};
use ppspp::merkle::HashAlgorithm;
use ppspp::store::{ChunkStore, SparseStore};
use ppspp::time::Time;
use std::time::Duration;

type Node = Engine<u32, SparseStore>;

const CS: usize = 1024;
const PER_SIG: u64 = 8;
/// Each test runs with munros of `PER_SIG` chunks and with Sign All.
const SIGNINGS: [u64; 2] = [PER_SIG, SIGN_ALL];
const WINDOW: u64 = 256;
/// Chunks the source makes per 100 ms step (about 0.66 Mbit/s).
const PER_STEP: u64 = 8;

fn params(per_sig: u64) -> LiveParams {
    LiveParams {
        hash: HashAlgorithm::Sha256,
        chunk_size: CS as u32,
        chunks_per_signature: per_sig,
        discard_window: WINDOW,
    }
}

fn key(alg: LiveAlgorithm) -> LiveSigningKey {
    LiveSigningKey::from_secret(alg, &[7; 32]).unwrap()
}

/// The stream's bytes of chunk `i`.
fn chunk(i: u64) -> Vec<u8> {
    (0..CS as u64).map(|j| (i * 131 + j * 7) as u8).collect()
}

fn source(alg: LiveAlgorithm, per_sig: u64) -> Node {
    Engine::new_live_source(
        EngineConfig::default(),
        key(alg),
        params(per_sig),
        SparseStore::live(CS),
        Time::ZERO,
    )
    .unwrap()
}

fn viewer(alg: LiveAlgorithm, config: EngineConfig, per_sig: u64) -> Node {
    let info = LiveInfo {
        key: key(alg).public_key().clone(),
        params: params(per_sig),
    };
    Engine::new_live(config, info, SparseStore::live(CS), Time::ZERO).unwrap()
}

/// Feeds the source (node 0) `PER_STEP` chunks every 100 ms until `until`, running the
/// network between; returns the next chunk index.
fn stream(net: &mut VirtualNet, nodes: &mut [Node], mut next: u64, until: Time) -> u64 {
    while net.now < until {
        let now = net.now;
        for _ in 0..PER_STEP {
            let c = nodes[0].push_live_chunk(&chunk(next), now).unwrap();
            assert_eq!(c, next);
            next += 1;
        }
        net.drain(now, 0, &mut nodes[0]);
        net.run(nodes, now + Duration::from_millis(100), |_| false);
    }
    next
}

/// Every chunk `node` holds is the source's.
fn holds_only_the_stream(node: &mut Node) -> u64 {
    let held: Vec<u64> = node
        .have()
        .filled_ranges()
        .flat_map(|r| r.start..r.end)
        .collect();
    for &c in &held {
        let mut out = Vec::new();
        assert!(node.store_mut().read_chunk(c, &mut out).unwrap(), "{c}");
        assert_eq!(out, chunk(c), "chunk {c}");
    }
    held.len() as u64
}

#[test]
fn viewers_tune_in_at_the_edge_relay_and_keep_only_the_window() {
    let cases = [LiveAlgorithm::EcdsaP256Sha256, LiveAlgorithm::Ed25519]
        .into_iter()
        .flat_map(|alg| SIGNINGS.map(|per_sig| (alg, per_sig)));
    for (alg, per_sig) in cases {
        let mut net = VirtualNet::new(Duration::from_millis(10), 0, 1);
        // Viewer 2 meets only viewer 1: what it gets, it gets relayed.
        let no_pex = EngineConfig {
            pex: false,
            ..EngineConfig::default()
        };
        let mut nodes = vec![
            source(alg, per_sig),
            viewer(alg, no_pex.clone(), per_sig),
            viewer(alg, no_pex, per_sig),
        ];
        // The stream runs 3 s before anyone joins.
        let next = stream(&mut net, &mut nodes, 0, Time::from_millis(3_000));
        assert_eq!(nodes[0].live_edge(), Some(next));
        nodes[1].connect(0, net.now);
        nodes[2].connect(1, net.now);
        let joined_at = next;
        let next = stream(&mut net, &mut nodes, next, Time::from_millis(20_000));

        for (i, n) in nodes.iter_mut().enumerate().skip(1) {
            let evs = events(n);
            let first = evs
                .iter()
                .find_map(|e| match e {
                    Event::ChunkVerified { chunk, .. } => Some(*chunk),
                    _ => None,
                })
                .unwrap_or_else(|| panic!("viewer {i} got nothing ({alg:?}, {per_sig})"));
            assert!(
                first + 2 * PER_SIG >= joined_at,
                "viewer {i} tuned in at the edge: first chunk {first}, edge {joined_at} ({per_sig})"
            );
            assert!(evs.iter().any(|e| matches!(e, Event::LiveEdge { .. })));
            // It keeps up: near the edge, and the window behind it.
            let edge = n.live_edge().unwrap();
            assert!(
                edge + 2 * PER_SIG >= next,
                "viewer {i}: edge {edge} of {next} ({per_sig})"
            );
            let held = holds_only_the_stream(n);
            assert!(held <= WINDOW, "viewer {i} holds {held} chunks");
            assert!(held >= WINDOW / 2, "viewer {i} holds {held} chunks");
            assert_eq!(n.live_floor(), Some(edge - WINDOW));
            let stats = n.stats();
            assert_eq!(stats.chunks_rejected, 0);
            assert!(stats.munros_accepted > 0);
        }
        let from_relay = nodes[2].channel_stats();
        assert_eq!(from_relay.len(), 1, "viewer 2 meets viewer 1 only");
        assert!(from_relay[0].bytes_downloaded > 100 * CS as u64);
        assert!(nodes[0].stats().chunks_have <= WINDOW);
        assert!(holds_only_the_stream(&mut nodes[0]) <= WINDOW);
    }
}

#[test]
fn the_end_of_a_stream_is_signed_and_reaches_viewers() {
    for per_sig in SIGNINGS {
        end_of_stream(per_sig);
    }
}

fn end_of_stream(per_sig: u64) {
    let alg = LiveAlgorithm::Ed25519;
    let mut net = VirtualNet::new(Duration::from_millis(5), 0, 2);
    let mut nodes = vec![
        source(alg, per_sig),
        viewer(alg, EngineConfig::default(), per_sig),
    ];
    nodes[1].connect(0, Time::ZERO);
    // From the start, not from the edge (a viewer hooks in at the newest chunk).
    nodes[1].set_playhead(0);
    net.run(&mut nodes, Time::from_millis(100), |_| false);
    // 13 chunks, the last one short: by munros, 8 are signed as they come, 4 + 1 at the
    // end; under Sign All, each as it comes.
    for i in 0..13u64 {
        let mut data = chunk(i);
        if i == 12 {
            data.truncate(100);
        }
        nodes[0].push_live_chunk(&data, net.now).unwrap();
    }
    let signed = if per_sig == SIGN_ALL { 13 } else { 8 };
    assert_eq!(nodes[0].live_edge(), Some(signed));
    nodes[0].finish_live(net.now).unwrap();
    assert_eq!(nodes[0].live_edge(), Some(13));
    assert!(nodes[0].push_live_chunk(&chunk(13), net.now).is_err());
    net.drain(net.now, 0, &mut nodes[0]);
    let limit = net.now + Duration::from_secs(5);
    net.run(&mut nodes, limit, |n| n[1].stats().chunks_have == 13);
    assert_eq!(nodes[1].stats().chunks_have, 13);
    let mut out = Vec::new();
    assert!(nodes[1].store_mut().read_chunk(12, &mut out).unwrap());
    assert_eq!(out, chunk(12)[..100]);
}

fn codec() -> CodecConfig {
    CodecConfig {
        chunk_addressing: ChunkAddressing::Chunk32,
        hash_size: 32,
        chunk_size: CS as u32,
        signature_size: 64,
        ..CodecConfig::default()
    }
}

/// Rewrites every datagram of a node, message by message.
fn rewriting(mut f: impl FnMut(&Message<'_>, &mut DatagramBuilder) -> bool + 'static) -> Rewrite {
    Box::new(move |bytes| {
        let Ok(dg) = decode_datagram(bytes, &codec()) else {
            return bytes.to_vec();
        };
        let mut b = DatagramBuilder::new(dg.channel, &codec());
        for msg in dg.messages() {
            let Ok(msg) = msg else {
                return bytes.to_vec();
            };
            if !f(&msg, &mut b) {
                b.push(&msg).unwrap();
            }
        }
        b.finish()
    })
}

/// Viewer 2 meets the stream only through node 1, whose datagrams `rewrite` changes; it
/// must ban node 1 for `why` and keep nothing it sent.
fn forger_is_banned(
    rewrite: Rewrite,
    viewer_config: EngineConfig,
    per_sig: u64,
    why: impl Fn(&Misbehaviour) -> bool,
) {
    let alg = LiveAlgorithm::EcdsaP256Sha256;
    let mut net = VirtualNet::new(Duration::from_millis(10), 0, 3);
    let no_pex = EngineConfig {
        pex: false,
        ..EngineConfig::default()
    };
    let mut nodes = vec![
        source(alg, per_sig),
        viewer(alg, no_pex, per_sig),
        viewer(
            alg,
            EngineConfig {
                pex: false,
                ..viewer_config
            },
            per_sig,
        ),
    ];
    nodes[1].connect(0, Time::ZERO);
    let next = stream(&mut net, &mut nodes, 0, Time::from_millis(2_000));
    net.rewrite.insert(1, rewrite);
    nodes[2].connect(1, net.now);
    stream(&mut net, &mut nodes, next, Time::from_millis(6_000));
    let evs = events(&mut nodes[2]);
    let banned = evs.iter().any(|e| {
        matches!(e, Event::PeerClosed { peer: 1, reason: CloseReason::Misbehaving(m) } if why(m))
    });
    assert!(banned, "{per_sig}: {evs:?}");
    assert_eq!(nodes[2].stats().chunks_have, 0, "nothing forged is kept");
    assert!(
        !evs.iter().any(|e| matches!(e, Event::ChunkVerified { .. })),
        "nothing forged is handed on"
    );
    // Banned: it is not connected again.
    assert!(nodes[2].peers().next().is_none());
}

#[test]
fn a_forged_signature_gets_the_peer_banned() {
    for per_sig in SIGNINGS {
        forged_signature(per_sig);
    }
}

fn forged_signature(per_sig: u64) {
    let rewrite = rewriting(|msg, b| match msg {
        Message::SignedIntegrity {
            chunks,
            timestamp,
            signature,
        } => {
            let mut forged = signature.to_vec();
            forged[10] ^= 1;
            b.push(&Message::SignedIntegrity {
                chunks: *chunks,
                timestamp: *timestamp,
                signature: &forged,
            })
            .unwrap();
            true
        }
        _ => false,
    });
    forger_is_banned(rewrite, EngineConfig::default(), per_sig, |m| {
        matches!(m, Misbehaviour::Live(LiveError::BadSignature(_)))
    });
}

#[test]
fn a_forged_chunk_gets_the_peer_banned() {
    for per_sig in SIGNINGS {
        forged_chunk(per_sig);
    }
}

fn forged_chunk(per_sig: u64) {
    let rewrite = rewriting(|msg, b| match msg {
        Message::Data {
            chunks,
            timestamp,
            payload,
        } => {
            let mut forged = payload.to_vec();
            forged[0] ^= 1;
            b.push(&Message::Data {
                chunks: *chunks,
                timestamp: *timestamp,
                payload: &forged,
            })
            .unwrap();
            true
        }
        _ => false,
    });
    // Under Sign All the signature covers the bytes: it is what fails.
    forger_is_banned(rewrite, EngineConfig::default(), per_sig, |m| {
        matches!(
            m,
            Misbehaviour::Live(LiveError::Mismatch(_) | LiveError::BadSignature(_))
        )
    });
}

#[test]
fn a_replayed_old_munro_gets_the_peer_banned() {
    // The viewer's clock is 10 minutes ahead: every munro looks 10 minutes old.
    let ahead = EngineConfig {
        wall_clock_offset: Duration::from_secs(600),
        ..EngineConfig::default()
    };
    for per_sig in SIGNINGS {
        forger_is_banned(
            Box::new(|b: &[u8]| b.to_vec()),
            ahead.clone(),
            per_sig,
            |m| matches!(m, Misbehaviour::Live(LiveError::Stale { .. })),
        );
    }
}

#[test]
fn unsigned_chunks_and_announcements_past_the_edge_are_not_taken() {
    for per_sig in SIGNINGS {
        unsigned_chunks(per_sig);
    }
}

fn unsigned_chunks(per_sig: u64) {
    let alg = LiveAlgorithm::Ed25519;
    let mut net = VirtualNet::new(Duration::from_millis(10), 0, 4);
    let mut nodes = vec![
        source(alg, per_sig),
        viewer(alg, EngineConfig::default(), per_sig),
    ];
    nodes[1].connect(0, Time::ZERO);
    // The source's munros and signatures never arrive: without them the chunks, their
    // HAVEs and the DATA that comes anyway are worth nothing.
    net.rewrite.insert(
        0,
        rewriting(|msg, _| matches!(msg, Message::SignedIntegrity { .. })),
    );
    stream(&mut net, &mut nodes, 0, Time::from_millis(3_000));
    let v = &mut nodes[1];
    assert_eq!(v.live_edge(), Some(0));
    assert_eq!(v.stats().chunks_have, 0);
    assert!(
        !events(v)
            .iter()
            .any(|e| matches!(e, Event::ChunkVerified { .. }))
    );
}

#[test]
fn live_and_static_peers_and_other_sources_do_not_meet() {
    let other_key = LiveInfo {
        key: LiveSigningKey::from_secret(LiveAlgorithm::Ed25519, &[8; 32])
            .unwrap()
            .public_key()
            .clone(),
        params: params(PER_SIG),
    };
    // The source's key, but Sign All where the source signs munros.
    let other_method = LiveInfo {
        key: key(LiveAlgorithm::Ed25519).public_key().clone(),
        params: params(SIGN_ALL),
    };
    for (seed, other) in [(5, other_key), (6, other_method)] {
        let mut net = VirtualNet::new(Duration::from_millis(10), 0, seed);
        let mut nodes = vec![
            source(LiveAlgorithm::Ed25519, PER_SIG),
            Engine::new_live(
                EngineConfig::default(),
                other,
                SparseStore::live(CS),
                Time::ZERO,
            )
            .unwrap(),
        ];
        nodes[1].connect(0, Time::ZERO);
        stream(&mut net, &mut nodes, 0, Time::from_millis(2_000));
        assert_eq!(nodes[1].stats().chunks_have, 0);
        assert_eq!(
            nodes[0].stats().peers,
            0,
            "another swarm's handshake is dropped ({seed})"
        );
    }
}

/// Sign All: a peer that claims chunks far past the edge (a signature nobody can check
/// before the chunk, and HAVEs) does not keep a newcomer from the real edge, even when its
/// claim comes first; what it claimed beyond a window of the verified edge is dropped.
#[test]
fn a_false_claim_of_the_edge_does_not_hold_a_newcomer_back() {
    const FAR: u32 = 4_000_000;
    let alg = LiveAlgorithm::Ed25519;
    let mut net = VirtualNet::new(Duration::from_millis(10), 0, 7);
    let no_pex = EngineConfig {
        pex: false,
        ..EngineConfig::default()
    };
    let mut nodes = vec![
        source(alg, SIGN_ALL),
        viewer(alg, no_pex.clone(), SIGN_ALL),
        viewer(alg, no_pex, SIGN_ALL),
    ];
    nodes[1].connect(0, Time::ZERO);
    let next = stream(&mut net, &mut nodes, 0, Time::from_millis(2_000));
    // Node 1 adds to every signature it sends a fresh-looking one for a chunk far ahead,
    // and announces chunks there.
    net.rewrite.insert(
        1,
        rewriting(|msg, b| {
            if let Message::SignedIntegrity {
                timestamp,
                signature,
                ..
            } = msg
            {
                let far = ChunkSpec::Chunk32 {
                    start: FAR,
                    end: FAR,
                };
                let junk = vec![7u8; signature.len()];
                b.push(&Message::SignedIntegrity {
                    chunks: far,
                    timestamp: *timestamp,
                    signature: &junk,
                })
                .unwrap();
                b.push(&Message::Have(ChunkSpec::Chunk32 {
                    start: FAR,
                    end: FAR + 9,
                }))
                .unwrap();
            }
            false
        }),
    );
    // The newcomer meets the liar first, the source a moment later.
    nodes[2].connect(1, net.now);
    let until = net.now + Duration::from_millis(300);
    let next = stream(&mut net, &mut nodes, next, until);
    nodes[2].connect(0, net.now);
    let until = net.now + Duration::from_millis(6_000);
    let next = stream(&mut net, &mut nodes, next, until);
    let v = &mut nodes[2];
    let edge = v.live_edge().unwrap();
    assert!(edge + 2 * PER_STEP >= next, "edge {edge} of {next}");
    assert!(holds_only_the_stream(v) > 0);
    assert!(
        v.live_floor().unwrap() + WINDOW >= edge,
        "the window follows verified chunks only"
    );
}

/// What the first run of a restarted source streamed: other bytes at the same numbers.
fn earlier_chunk(i: u64) -> Vec<u8> {
    chunk(i).iter().map(|b| b ^ 0x5a).collect()
}

/// A live source of `alg` and `per_sig` whose run is drawn from `seed`.
fn run_of(alg: LiveAlgorithm, per_sig: u64, seed: u64) -> Node {
    Engine::new_live_source(
        EngineConfig {
            seed,
            ..EngineConfig::default()
        },
        key(alg),
        params(per_sig),
        SparseStore::live(CS),
        Time::ZERO,
    )
    .unwrap()
}

/// Feeds node 2 (an earlier run of the source, its own bytes) until `until`.
fn stream_earlier(net: &mut VirtualNet, nodes: &mut [Node], mut next: u64, until: Time) -> u64 {
    while net.now < until {
        let now = net.now;
        for _ in 0..PER_STEP {
            nodes[2].push_live_chunk(&earlier_chunk(next), now).unwrap();
            next += 1;
        }
        net.drain(now, 2, &mut nodes[2]);
        net.run(nodes, now + Duration::from_millis(100), |_| false);
    }
    next
}

/// No peer was banned, and the viewer holds only the current run and keeps up with it.
fn follows_the_current_run(viewer: &mut Node, next: u64, case: &str) -> Vec<Event<u32>> {
    let evs = events(viewer);
    for e in &evs {
        assert!(
            !matches!(
                e,
                Event::PeerClosed {
                    reason: CloseReason::Misbehaving(_),
                    ..
                }
            ),
            "{case}: {e:?}"
        );
    }
    let held = holds_only_the_stream(viewer);
    let edge = viewer.live_edge().unwrap();
    assert!(
        edge <= next && edge + 2 * PER_SIG + 2 * PER_STEP >= next,
        "{case}: the viewer's edge {edge}, the source's {next}"
    );
    assert!(held >= WINDOW / 2, "{case}: {held} chunks held");
    evs
}

/// A source restarted with the same key numbers its chunks from 0 again. A peer that kept
/// the first run (here the first run's own engine, still holding its window) offers a
/// newcomer to the second run the first run's munros and chunks, signed 13–25 s earlier
/// and so within `live_max_age`: whether the viewer meets it before or after the real
/// source, it takes none of them (too old to join by, or of another run), bans neither
/// peer, and plays the second run. Before munros named their run, the honest source was
/// banned (`NotAMunro`) or the viewer took the first run's edge and lost the stream.
#[test]
fn an_earlier_run_of_the_source_fools_no_viewer() {
    let alg = LiveAlgorithm::Ed25519;
    for per_sig in SIGNINGS {
        for earlier_first in [true, false] {
            let mut net = VirtualNet::new(Duration::from_millis(10), 0, 1);
            // 0: the second (current) run, 1: a viewer, 2: the first run.
            let mut nodes = vec![
                run_of(alg, per_sig, 2),
                viewer(alg, EngineConfig::default(), per_sig),
                run_of(alg, per_sig, 1),
            ];
            let earlier = stream_earlier(&mut net, &mut nodes, 0, Time::from_millis(12_000));
            let next = stream(&mut net, &mut nodes, 0, Time::from_millis(25_000));
            let (first, second) = if earlier_first { (2, 0) } else { (0, 2) };
            nodes[1].connect(first, net.now);
            let next = stream(&mut net, &mut nodes, next, Time::from_millis(25_500));
            nodes[1].connect(second, net.now);
            let next = stream(&mut net, &mut nodes, next, Time::from_millis(40_000));
            assert!(next > earlier + WINDOW, "the second run passed the first");
            let case =
                format!("{per_sig} chunks a signature, earlier run met first: {earlier_first}");
            let evs = follows_the_current_run(&mut nodes[1], next, &case);
            assert!(!evs.contains(&Event::LiveRestarted), "{case}");
        }
    }
}

/// The source restarts while a viewer watches (a new run, chunks from 0 again) and the
/// viewer meets the new run: its genuine, newer munros move the viewer to it, which says
/// so (`LiveRestarted`), lets go of the old run, bans nobody (the old run's peer stays
/// quiet), and plays the new run past where the old one had reached.
#[test]
fn a_viewer_follows_its_source_into_a_new_run() {
    let alg = LiveAlgorithm::Ed25519;
    let per_sig = PER_SIG;
    let mut net = VirtualNet::new(Duration::from_millis(10), 0, 1);
    let mut nodes = vec![
        run_of(alg, per_sig, 2),
        viewer(alg, EngineConfig::default(), per_sig),
        run_of(alg, per_sig, 1),
    ];
    nodes[1].connect(2, Time::ZERO);
    let earlier = stream_earlier(&mut net, &mut nodes, 0, Time::from_millis(10_000));
    assert!(
        nodes[1].live_edge().unwrap() + 2 * PER_SIG >= earlier,
        "it watched the first run"
    );
    let _ = events(&mut nodes[1]);
    nodes[1].connect(0, net.now);
    let next = stream(&mut net, &mut nodes, 0, Time::from_millis(55_000));
    assert!(next > earlier + WINDOW, "the new run passed the old one");
    let evs = follows_the_current_run(&mut nodes[1], next, "restarted");
    assert_eq!(
        evs.iter().filter(|e| **e == Event::LiveRestarted).count(),
        1,
        "told once"
    );
}

/// Signatures dated ahead of the viewer's clock by more than `live_max_ahead` are not
/// taken (one dated a year ahead was, and would never have gone stale), and no peer is
/// blamed: clocks differ.
#[test]
fn munros_dated_far_ahead_are_not_taken() {
    let alg = LiveAlgorithm::Ed25519;
    for per_sig in SIGNINGS {
        let mut net = VirtualNet::new(Duration::from_millis(10), 0, 1);
        let year_ahead = EngineConfig {
            wall_clock_offset: Duration::from_secs(365 * 86_400),
            ..EngineConfig::default()
        };
        let src = Engine::new_live_source(
            year_ahead,
            key(alg),
            params(per_sig),
            SparseStore::live(CS),
            Time::ZERO,
        )
        .unwrap();
        let mut nodes = vec![src, viewer(alg, EngineConfig::default(), per_sig)];
        nodes[1].connect(0, Time::ZERO);
        stream(&mut net, &mut nodes, 0, Time::from_millis(5_000));
        assert_eq!(nodes[1].live_edge(), Some(0), "{per_sig}");
        assert_eq!(nodes[1].have().count_filled(), 0, "{per_sig}");
        for e in events(&mut nodes[1]) {
            assert!(
                !matches!(
                    e,
                    Event::PeerClosed {
                        reason: CloseReason::Misbehaving(_),
                        ..
                    }
                ),
                "{per_sig}: {e:?}"
            );
        }
    }
}
