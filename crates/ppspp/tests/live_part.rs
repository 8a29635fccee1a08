//! Segments of a live presentation taken whole from a web server
//! (`Engine::handle_live_part`): a source engine cuts segments so each ends a signing
//! group, its `LiveSigned` events give the munros a presentation's manifest lists, and a
//! viewer checks a segment against them and its signed record, keeps it, and relays it to
//! a peer that never saw the server. Whatever the server changes is refused.

use crate::common;

use common::virtual_net::VirtualNet;
use ppspp::engine::{Engine, EngineConfig, Event, LiveInfo, LiveParams, LivePartError};
use ppspp::live::segment::{segment_chunk_count, segment_chunk_lengths};
use ppspp::live::{LiveAlgorithm, LivePart, LiveSigningKey, SIGN_ALL, SignedMunro};
use ppspp::merkle::HashAlgorithm;
use ppspp::store::{ChunkStore, SparseStore};
use ppspp::time::Time;
use std::time::Duration;

type Node = Engine<u32, SparseStore>;

const CS: usize = 1024;
const WINDOW: u64 = 1024;

fn params(per_sig: u64) -> LiveParams {
    LiveParams {
        hash: HashAlgorithm::Sha256,
        chunk_size: CS as u32,
        chunks_per_signature: per_sig,
        discard_window: WINDOW,
    }
}

fn key() -> LiveSigningKey {
    LiveSigningKey::from_secret(LiveAlgorithm::Ed25519, &[9; 32]).unwrap()
}

fn viewer(per_sig: u64, config: EngineConfig) -> Node {
    let info = LiveInfo {
        key: key().public_key().clone(),
        params: params(per_sig),
    };
    Engine::new_live(config, info, SparseStore::live(CS), Time::ZERO).unwrap()
}

/// A segment's bytes: `n` of them, different for each segment.
fn segment(index: u64, n: usize) -> Vec<u8> {
    (0..n)
        .map(|j| (index as usize * 31 + j * 7) as u8)
        .collect()
}

/// What the source publishes for one segment: its record, the record's signature, the
/// munros over it, and its bytes.
struct Published {
    part: LivePart,
    signature: Vec<u8>,
    munros: Vec<SignedMunro>,
    bytes: Vec<u8>,
}

/// A source engine cutting `sizes` into segments as a live presentation's source does.
fn publish(per_sig: u64, sizes: &[usize], now: Time) -> (Node, Vec<Published>) {
    let mut source = Engine::new_live_source(
        EngineConfig::default(),
        key(),
        params(per_sig),
        SparseStore::live(CS),
        Time::ZERO,
    )
    .unwrap();
    let mut out = Vec::new();
    for (i, &n) in sizes.iter().enumerate() {
        let bytes = segment(i as u64, n);
        let first = source.live_edge().unwrap();
        let count = segment_chunk_count(n, CS, per_sig, first);
        let mut at = 0;
        for len in segment_chunk_lengths(n, CS, count).unwrap() {
            source.push_live_chunk(&bytes[at..at + len], now).unwrap();
            at += len;
        }
        let munros: Vec<SignedMunro> = std::iter::from_fn(|| source.poll_event())
            .filter_map(|e| match e {
                Event::LiveSigned { munro } => Some(munro),
                _ => None,
            })
            .collect();
        // The segment ended its signing group: all of it is signed, and only it.
        assert_eq!(source.live_edge(), Some(first + count), "{per_sig} {n}");
        let part = LivePart {
            uri: format!("v0_{i:05}.m4s"),
            first_chunk: first,
            chunks: count,
            length: n as u64,
            timestamp: munros.iter().map(|m| m.timestamp).max().unwrap(),
        };
        let signature = part.sign(&key());
        out.push(Published {
            part,
            signature,
            munros,
            bytes,
        });
    }
    (source, out)
}

fn take(node: &mut Node, p: &Published, now: Time) -> Result<u64, LivePartError> {
    node.handle_live_part(now, &p.part, &p.signature, &p.munros, &p.bytes)
}

/// The bytes `node` holds of segment `p`.
fn held(node: &mut Node, p: &Published) -> Vec<u8> {
    let mut all = Vec::new();
    for c in p.part.first_chunk..p.part.end_chunk() {
        let mut out = Vec::new();
        assert!(
            node.store_mut().read_chunk(c, &mut out).unwrap(),
            "chunk {c}"
        );
        all.extend_from_slice(&out);
    }
    all
}

const SIZES: [usize; 4] = [20_000, 1_500, 33_000, 8_192];

#[test]
fn a_segment_from_the_server_is_checked_kept_and_relayed() {
    for per_sig in [8, SIGN_ALL] {
        let now = Time::from_millis(1_000);
        let (_, published) = publish(per_sig, &SIZES, now);
        let mut net = VirtualNet::new(Duration::from_millis(10), 0, 3);
        let mut nodes = vec![
            viewer(per_sig, EngineConfig::default()),
            viewer(per_sig, EngineConfig::default()),
        ];
        for p in &published[1..] {
            let kept = take(&mut nodes[0], p, now).unwrap();
            assert_eq!(kept, p.part.chunks, "{per_sig}");
            assert_eq!(held(&mut nodes[0], p), p.bytes);
        }
        // Taken again: nothing new, no error.
        assert_eq!(take(&mut nodes[0], &published[2], now), Ok(0));
        let from_origin = std::iter::from_fn(|| nodes[0].poll_event())
            .filter(|e| matches!(e, Event::ChunkFromOrigin { .. }))
            .count() as u64;
        let total: u64 = published[1..].iter().map(|p| p.part.chunks).sum();
        assert_eq!(from_origin, total);
        // A peer that never saw the server gets the segments from the viewer.
        nodes[1].connect(0, now);
        nodes[1].set_playhead(published[1].part.first_chunk);
        let last = published[3].part.end_chunk();
        net.run(&mut nodes, now + Duration::from_secs(5), |n| {
            (published[1].part.first_chunk..last)
                .all(|c| n[1].have().is_filled(ppspp::Bin::chunk(c).unwrap()))
        });
        for p in &published[1..] {
            assert_eq!(held(&mut nodes[1], p), p.bytes, "{per_sig}");
        }
        assert_eq!(nodes[1].stats().chunks_rejected, 0);
    }
}

#[test]
fn whatever_the_server_changes_is_refused_and_nothing_is_kept() {
    for per_sig in [8, SIGN_ALL] {
        let now = Time::from_millis(1_000);
        let (_, published) = publish(per_sig, &SIZES, now);
        let p = &published[2];
        let fresh = || viewer(per_sig, EngineConfig::default());

        // A byte changed.
        let mut node = fresh();
        let mut bytes = p.bytes.clone();
        bytes[5_000] ^= 1;
        let r = node.handle_live_part(now, &p.part, &p.signature, &p.munros, &bytes);
        assert!(matches!(r, Err(LivePartError::Mismatch(_))), "{r:?}");
        assert_eq!(node.stats().chunks_have, 0);

        // Another segment's bytes under this record (same length): refused.
        let other = segment(7, p.bytes.len());
        let r = node.handle_live_part(now, &p.part, &p.signature, &p.munros, &other);
        assert!(matches!(r, Err(LivePartError::Mismatch(_))), "{r:?}");

        // The record pointed at another segment's chunks: its signature no longer holds.
        let mut moved = p.part.clone();
        moved.first_chunk = published[1].part.first_chunk;
        let r = node.handle_live_part(now, &moved, &p.signature, &published[1].munros, &p.bytes);
        assert_eq!(r, Err(LivePartError::BadSignature));

        // Another segment's genuine record and munros for these bytes.
        let q = &published[0];
        let r = node.handle_live_part(now, &q.part, &q.signature, &q.munros, &p.bytes);
        assert!(matches!(r, Err(LivePartError::WrongLength { .. })), "{r:?}");

        // A record signed by another key.
        let stranger = LiveSigningKey::from_secret(LiveAlgorithm::Ed25519, &[1; 32]).unwrap();
        let sig = p.part.sign(&stranger);
        let r = node.handle_live_part(now, &p.part, &sig, &p.munros, &p.bytes);
        assert_eq!(r, Err(LivePartError::BadSignature));

        // Munros missing, or of other chunks.
        let r = node.handle_live_part(now, &p.part, &p.signature, &p.munros[1..], &p.bytes);
        assert_eq!(r, Err(LivePartError::NotCovered));
        let r = node.handle_live_part(now, &p.part, &p.signature, &q.munros, &p.bytes);
        assert_eq!(r, Err(LivePartError::NotCovered));
        assert_eq!(node.stats().chunks_have, 0);

        // Under Sign All, a signature passed off as covering two chunks.
        if per_sig == SIGN_ALL {
            let mut wide = p.munros.clone();
            let i = wide
                .iter()
                .position(|m| m.bin.base_offset() % 2 == 0)
                .unwrap();
            wide.remove(i + 1);
            wide[i].bin = wide[i].bin.parent();
            let r = node.handle_live_part(now, &p.part, &p.signature, &wide, &p.bytes);
            assert_eq!(r, Err(LivePartError::NotCovered));
        }

        // A recording replayed long after: stale.
        let later = now + Duration::from_secs(600);
        let r = take(&mut fresh(), p, later);
        assert!(matches!(r, Err(LivePartError::Date { .. })), "{r:?}");

        // The genuine one still goes in after all that.
        assert_eq!(take(&mut node, p, now), Ok(p.part.chunks));
    }
}

#[test]
fn a_viewer_joins_at_a_segment_a_few_seconds_old_but_not_at_an_old_recording() {
    let signed_at = Time::from_millis(1_000);
    let (_, published) = publish(8, &SIZES, signed_at);
    let p = &published[1];
    // Older than a peer's tune-in (10 s), as a player's first segment is.
    let now = signed_at + Duration::from_secs(20);
    let mut node = viewer(8, EngineConfig::default());
    assert_eq!(take(&mut node, p, now), Ok(p.part.chunks));
    // Older than a part's tune-in (40 s) but recent enough once the run is followed.
    let now = signed_at + Duration::from_secs(60);
    let r = take(&mut viewer(8, EngineConfig::default()), p, now);
    assert!(matches!(r, Err(LivePartError::Munro(_))), "{r:?}");
    assert_eq!(
        take(&mut node, &published[2], now),
        Ok(published[2].part.chunks)
    );
}

#[test]
fn an_aimed_viewer_fetches_from_its_aim_and_no_further_than_its_read_ahead() {
    for per_sig in [8, SIGN_ALL] {
        let now = Time::from_millis(1_000);
        let (_, published) = publish(per_sig, &SIZES, now);
        let mut net = VirtualNet::new(Duration::from_millis(10), 0, 5);
        let mut nodes = vec![
            viewer(per_sig, EngineConfig::default()),
            viewer(per_sig, EngineConfig::default()),
        ];
        for p in &published {
            take(&mut nodes[0], p, now).unwrap();
        }
        // The second viewer plays segment 1 and reads one segment ahead: it tunes in
        // there, not at the edge, and asks for nothing of segment 3.
        let aim = &published[1].part;
        nodes[1].set_playhead(aim.first_chunk);
        nodes[1].set_read_ahead(Some(aim.chunks + published[2].part.chunks));
        nodes[1].connect(0, now);
        let chunk = |c| ppspp::Bin::chunk(c).unwrap();
        // Long enough for everything the peer holds to come.
        net.run(&mut nodes, now + Duration::from_secs(8), |_| false);
        for p in &published[1..3] {
            assert_eq!(held(&mut nodes[1], p), p.bytes, "{per_sig}");
        }
        let after = &published[3].part;
        assert!(
            (after.first_chunk..after.end_chunk()).all(|c| !nodes[1].have().is_filled(chunk(c))),
            "{per_sig}: fetched past its read-ahead"
        );
        assert!(
            (0..published[1].part.first_chunk).all(|c| !nodes[1].have().is_filled(chunk(c))),
            "{per_sig}: fetched before its aim"
        );
        // The peer said it holds the next segment, which was not fetched.
        assert_eq!(nodes[1].peers_holding(after.first_chunk), 1, "{per_sig}");
        assert_eq!(nodes[1].peers_holding(after.end_chunk() + 100), 0);
        // Aimed at the next segment, it takes it.
        nodes[1].set_playhead(after.first_chunk);
        net.run(&mut nodes, now + Duration::from_secs(14), |n| {
            (after.first_chunk..after.end_chunk()).all(|c| n[1].have().is_filled(chunk(c)))
        });
        assert_eq!(held(&mut nodes[1], &published[3]), published[3].bytes);
    }
}
