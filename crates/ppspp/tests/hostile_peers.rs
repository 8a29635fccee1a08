//! Peers that attack or misbehave, against real engines: each case was found by attacking
//! the seeder and `fetch` (spoofed handshakes, costly requests, peers of no use, data
//! without its hashes, a full disk, our own address, PEX pointing at our LAN) and must stay
//! fixed. Time is simulated, so every test is deterministic and bounded.

use crate::common;

use common::engines::events;
use common::virtual_net::{VirtualNet, poll};
use ppspp::codec::{
    ChunkAddressing, ChunkSpec, CodecConfig, ContentIntegrity, DatagramBuilder, Handshake,
    HandshakeOptions, Message, decode_datagram,
};
use ppspp::engine::{CloseReason, ContentInfo, Engine, EngineConfig, Event, Misbehaviour};
use ppspp::merkle::{HashAlgorithm, MerkleTree};
use ppspp::store::{ChunkStore, MemoryStore, StoreError};
use ppspp::time::Time;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

type Node = Engine<u32, MemoryStore>;

fn content(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 % 251) as u8).collect()
}

fn seeder(data: &[u8], cs: usize, config: EngineConfig) -> Node {
    let tree = MerkleTree::from_content(HashAlgorithm::Sha1, cs, data).unwrap();
    Engine::new_seeder(
        config,
        &tree,
        MemoryStore::with_content(data.to_vec(), cs),
        Time::ZERO,
    )
    .unwrap()
}

fn info(data: &[u8], cs: usize) -> ContentInfo {
    let tree = MerkleTree::from_content(HashAlgorithm::Sha1, cs, data).unwrap();
    ContentInfo {
        root: tree.root(),
        hash: HashAlgorithm::Sha1,
        chunk_size: cs as u32,
        content_len: data.len() as u64,
    }
}

fn leecher(data: &[u8], cs: usize) -> Node {
    Engine::new(
        EngineConfig::default(),
        info(data, cs),
        MemoryStore::new(data.len(), cs),
        Time::ZERO,
    )
    .unwrap()
}

fn codec(cs: u32) -> CodecConfig {
    CodecConfig {
        chunk_size: cs,
        ..CodecConfig::default()
    }
}

fn opening(root: &ppspp::merkle::Hash, source_channel: u32, cs: u32) -> Vec<u8> {
    let mut b = DatagramBuilder::new(0, &codec(cs));
    b.push(&Message::Handshake(Handshake {
        source_channel,
        options: HandshakeOptions {
            version: Some(1),
            min_version: Some(1),
            swarm_id: Some(root.as_bytes()),
            content_integrity: Some(ContentIntegrity::MerkleTree),
            merkle_hash_function: Some(0),
            chunk_addressing: Some(ChunkAddressing::Chunk32),
            chunk_size: (cs != 1024).then_some(cs),
            ..HandshakeOptions::default()
        },
    }))
    .unwrap();
    b.finish()
}

fn range(first: u64, last: u64, cs: u32) -> ChunkSpec {
    ChunkSpec::from_chunk_range(first, last, ChunkAddressing::Chunk32, cs).unwrap()
}

/// The channel ID a responder's answer gives us, from its handshake.
fn answered_channel(bytes: &[u8], cs: u32) -> u32 {
    let dg = decode_datagram(bytes, &codec(cs)).unwrap();
    match dg.messages().next() {
        Some(Ok(Message::Handshake(h))) => h.source_channel,
        other => panic!("expected a handshake answer, got {other:?}"),
    }
}

fn messages_of(bytes: &[u8], cs: u32) -> Vec<String> {
    decode_datagram(bytes, &codec(cs))
        .map(|d| {
            d.messages()
                .filter_map(Result::ok)
                .map(|m| format!("{m:?}"))
                .collect()
        })
        .unwrap_or_default()
}

/// Rewrites a node's datagrams on their way (chunk size given).
type Rewrite = fn(&[u8], u32) -> Vec<u8>;

/// Engines at addresses 0, 1, … over links of one fixed delay (the shared virtual
/// network). A node's output can be rewritten on its way (an attacker built from an honest
/// engine), and the REQUEST messages each node sends are counted.
struct World {
    nodes: Vec<Node>,
    net: VirtualNet,
    cs: u32,
    /// REQUEST messages seen per (from, to).
    requests: Rc<RefCell<BTreeMap<(u32, u32), u64>>>,
}

impl World {
    fn new(nodes: Vec<Node>, cs: u32) -> World {
        let mut net = VirtualNet::new(Duration::from_millis(10), 0, 1);
        let requests = Rc::new(RefCell::new(BTreeMap::new()));
        let seen = requests.clone();
        net.observer = Some(Box::new(move |from, to, bytes: &[u8]| {
            let asks = messages_of(bytes, cs)
                .iter()
                .filter(|m| m.starts_with("Request"))
                .count() as u64;
            *seen.borrow_mut().entry((from, to)).or_default() += asks;
        }));
        World {
            nodes,
            net,
            cs,
            requests,
        }
    }

    /// Rewrites everything node `id` sends with `f`.
    fn rewrite(&mut self, id: u32, f: Rewrite) {
        let cs = self.cs;
        self.net.rewrite.insert(id, Box::new(move |b| f(b, cs)));
    }

    /// REQUEST messages `from` sent to `to`.
    fn requests(&self, from: u32, to: u32) -> u64 {
        self.requests
            .borrow()
            .get(&(from, to))
            .copied()
            .unwrap_or(0)
    }

    /// Runs until `done` or `limit`, on from where the last run stopped; returns the time
    /// reached.
    fn run(&mut self, limit: Time, done: impl Fn(&[Node]) -> bool) -> Time {
        self.net.run(&mut self.nodes, limit, done)
    }
}

/// Row 5: handshakes from thousands of (spoofed) addresses never come back. They must not
/// take the seeder's peer slots, and an honest peer must still get in and be served.
#[test]
fn spoofed_handshakes_take_no_peer_slot() {
    let data = content(64 * 1024);
    let config = EngineConfig {
        max_peers: 16,
        ..EngineConfig::default()
    };
    let mut seed = seeder(&data, 1024, config);
    let root = seed.content().root;
    let mut answered = 0;
    let mut answer_bytes = 0;
    for i in 0..2000u32 {
        let now = Time::from_millis(u64::from(i) * 5);
        seed.handle_datagram(now, 10_000 + i, &opening(&root, 0x1000 + i, 1024));
        seed.handle_timeout(now);
        while let Some(t) = poll(&mut seed, now) {
            answered += 1;
            answer_bytes += t.payload.len();
        }
    }
    // Each spoofed handshake draws one answer no larger than a handshake and a few HAVEs:
    // the seeder amplifies nothing much.
    assert_eq!(answered, 2000);
    assert!(answer_bytes < 2000 * 120, "{answer_bytes} bytes of answers");
    let stats = seed.stats();
    assert_eq!(stats.peers, 0, "unconfirmed handshakes hold no channel");
    assert!(stats.half_open <= EngineConfig::default().max_half_open);

    // An honest peer arriving during the flood gets in and fetches everything.
    let honest = leecher(&data, 1024);
    let mut world = World::new(vec![seed, honest], 1024);
    world.nodes[1].connect(0, Time::ZERO);
    world.run(Time::from_millis(20_000), |n| n[1].is_complete());
    assert!(world.nodes[1].is_complete(), "{:?}", world.nodes[1].stats());
    assert_eq!(world.nodes[1].store().bytes(), &data[..]);
}

/// The third datagram must come from the address that was answered, on the channel it was
/// given: a spoofer who guesses neither cannot make a channel.
#[test]
fn a_channel_is_made_only_by_the_answered_address() {
    let data = content(8 * 1024);
    let mut seed = seeder(&data, 1024, EngineConfig::default());
    let root = seed.content().root;
    seed.handle_datagram(Time::ZERO, 7, &opening(&root, 0x77, 1024));
    let answer = poll(&mut seed, Time::ZERO).unwrap();
    let ours = answered_channel(&answer.payload, 1024);
    // From another address: dropped.
    seed.handle_datagram(Time::ZERO, 8, &ours.to_be_bytes());
    assert_eq!(seed.stats().peers, 0);
    // From the answered one: a channel, connected.
    seed.handle_datagram(Time::ZERO, 7, &ours.to_be_bytes());
    assert_eq!((seed.stats().peers, seed.stats().half_open), (1, 0));
    assert!(events(&mut seed).contains(&Event::PeerConnected { peer: 7 }));
}

/// Runs `f` on a thread and fails if it does not finish in `limit`: for a request that
/// once cost time in proportion to the content (hours at this size), not to its ranges.
fn finishes_within<T: Send + 'static>(
    limit: Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| panic!("did not finish within {limit:?}"))
}

/// A store that keeps nothing: for content far larger than memory.
struct NullStore;

impl ChunkStore for NullStore {
    fn write_chunk(&mut self, _: u64, _: &[u8]) -> Result<(), StoreError> {
        Ok(())
    }
    fn read_chunk(&mut self, _: u64, _: &mut Vec<u8>) -> Result<bool, StoreError> {
        Ok(false)
    }
}

/// Opens a channel to `engine` from address `addr` as a raw peer; returns the engine's
/// channel ID for our datagrams.
fn raw_channel<S: ChunkStore>(engine: &mut Engine<u32, S>, addr: u32, cs: u32) -> u32 {
    let root = engine.content().root;
    engine.handle_datagram(Time::ZERO, addr, &opening(&root, 0x5150, cs));
    let answer = poll(engine, Time::ZERO).unwrap();
    answered_channel(&answer.payload, cs)
}

/// Row 6: a HAVE of everything, then datagrams full of REQUESTs for the whole content.
/// Each REQUEST must cost a search of its ranges, not a walk of its chunks.
#[test]
fn a_request_costs_its_ranges_not_its_chunks() {
    // 2^31 one-byte chunks: walking one request chunk by chunk takes many seconds.
    let chunks: u64 = 1 << 31;
    let info = ContentInfo {
        root: ppspp::merkle::Hash::from_slice(&[7u8; 20]).unwrap(),
        hash: HashAlgorithm::Sha1,
        chunk_size: 1,
        content_len: chunks,
    };
    let (peers, queued) = finishes_within(Duration::from_secs(60), move || {
        let mut victim: Engine<u32, NullStore> =
            Engine::new(EngineConfig::default(), info, NullStore, Time::ZERO).unwrap();
        let ch = raw_channel(&mut victim, 9, 1);
        for round in 0..20u64 {
            let mut b = DatagramBuilder::new(ch, &codec(1));
            if round == 0 {
                b.push(&Message::Have(range(0, chunks - 1, 1))).unwrap();
            }
            while b.len() < 1400 {
                b.push(&Message::Request(range(0, chunks - 1, 1))).unwrap();
            }
            victim.handle_datagram(Time::from_millis(round), 9, &b.finish());
        }
        let queued: usize = victim.channel_stats().iter().map(|c| c.serve_queue).sum();
        (victim.stats().peers, queued)
    });
    assert_eq!(peers, 1, "the requester stays connected");
    assert_eq!(queued, 0, "nothing we hold, nothing queued");
}

/// The same on a seeder: a peer claiming every other chunk asks for everything; what it
/// lacks is queued up to the serve-queue limit, and whole-content requests from it cost
/// searches, not walks.
#[test]
fn a_seeder_queues_only_what_a_requester_lacks() {
    let data = content(32 * 1024 * 1024);
    let cs = 1024u32;
    let n = (data.len() / 1024) as u64;
    let config = EngineConfig {
        max_serve_queue: 64,
        ..EngineConfig::default()
    };
    let mut seed = seeder(&data, 1024, config);
    let ch = raw_channel(&mut seed, 9, cs);
    let queued = |e: &Node| {
        e.channel_stats()
            .iter()
            .map(|c| c.serve_queue)
            .sum::<usize>()
    };
    let (first, rest) = finishes_within(Duration::from_secs(60), move || {
        let mut b = DatagramBuilder::new(ch, &codec(cs));
        for c in (0..n).step_by(2).take(100) {
            b.push(&Message::Have(range(c, c, cs))).unwrap();
        }
        seed.handle_datagram(Time::ZERO, 9, &b.finish());
        let mut b = DatagramBuilder::new(ch, &codec(cs));
        b.push(&Message::Request(range(0, n - 1, cs))).unwrap();
        seed.handle_datagram(Time::ZERO, 9, &b.finish());
        let first = queued(&seed);
        for round in 0..200u64 {
            let mut b = DatagramBuilder::new(ch, &codec(cs));
            while b.len() < 1400 {
                b.push(&Message::Request(range(0, n - 1, cs))).unwrap();
            }
            seed.handle_datagram(Time::from_millis(round), 9, &b.finish());
        }
        (first, queued(&seed))
    });
    assert_eq!(first, 64, "queued up to the limit");
    assert_eq!(rest, 64, "repeats add nothing");
}

/// Row 7: a peer that answers and keeps the channel alive but never offers a chunk (nor
/// asks for one) is closed within bounded time, so a fetch does not wait on it forever.
#[test]
fn a_peer_that_offers_nothing_is_closed() {
    let data = content(16 * 1024);
    // Two leechers with nothing: each only holds the other's slot.
    let a = leecher(&data, 1024);
    let b = leecher(&data, 1024);
    let mut world = World::new(vec![a, b], 1024);
    world.nodes[0].connect(1, Time::ZERO);
    let end = world.run(Time::from_millis(120_000), |n| {
        n[0].peers().count() == 0 && n[1].peers().count() == 0
    });
    assert!(end < Time::from_millis(45_000), "closed at {end:?}");
    let closed: Vec<_> = events(&mut world.nodes[0])
        .into_iter()
        .filter_map(|e| match e {
            Event::PeerClosed { reason, .. } => Some(reason),
            _ => None,
        })
        .collect();
    assert!(
        matches!(closed.as_slice(), [CloseReason::NothingToExchange(_)]),
        "{closed:?}"
    );
}

/// A peer that was of use stays however quiet it gets: two leechers that traded chunks
/// and then hold the same ones (their seeder gone) keep their channel.
#[test]
fn a_peer_that_was_of_use_stays() {
    let data = content(256 * 1024);
    let slow = EngineConfig {
        upload_limit: Some(40_000),
        ..EngineConfig::default()
    };
    let mut world = World::new(
        vec![
            seeder(&data, 1024, slow),
            leecher(&data, 1024),
            leecher(&data, 1024),
        ],
        1024,
    );
    world.nodes[1].connect(0, Time::ZERO);
    world.nodes[2].connect(0, Time::ZERO);
    world.nodes[1].connect(2, Time::ZERO);
    world.run(Time::from_millis(3_000), |_| false);
    world.net.cut.push(0);
    world.run(Time::from_millis(90_000), |_| false);
    for n in [1, 2] {
        let node = &world.nodes[n];
        assert!(!node.is_complete() && node.stats().chunks_have > 0);
        let other = 3 - n as u32;
        assert!(
            node.peers().any(|p| *p == other),
            "node {n} dropped its fellow leecher"
        );
    }
    assert_eq!(
        world.nodes[1].have().count_filled(),
        world.nodes[2].have().count_filled(),
        "they traded until they held the same"
    );
}

/// A seeder keeps its clients however quiet they are (a paused player asks for nothing).
#[test]
fn a_seeder_keeps_quiet_clients() {
    let data = content(16 * 1024);
    let seed = seeder(&data, 1024, EngineConfig::default());
    let mut quiet = leecher(&data, 1024);
    quiet.set_playhead(0);
    let mut world = World::new(vec![seed, quiet], 1024);
    world.nodes[1].connect(0, Time::ZERO);
    world.run(Time::from_millis(5_000), |n| n[1].is_complete());
    assert!(world.nodes[1].is_complete());
    world.run(Time::from_millis(120_000), |_| false);
    assert_eq!(world.nodes[0].peers().count(), 1);
}

/// `bytes` rebuilt with each message passed through `f` (`None`: left out); bytes that do
/// not decode go unchanged.
fn rewrite_messages(bytes: &[u8], cs: u32, f: impl Fn(Message) -> Option<Message>) -> Vec<u8> {
    let Ok(dg) = decode_datagram(bytes, &codec(cs)) else {
        return bytes.to_vec();
    };
    let mut b = DatagramBuilder::new(dg.channel, &codec(cs));
    for m in dg.messages().filter_map(Result::ok).filter_map(&f) {
        b.push(&m).unwrap();
    }
    b.finish()
}

/// Takes every INTEGRITY out of a datagram: DATA arrives without the hashes to verify it.
fn strip_hashes(bytes: &[u8], cs: u32) -> Vec<u8> {
    rewrite_messages(bytes, cs, |m| {
        (!matches!(m, Message::Integrity { .. })).then_some(m)
    })
}

/// The leecher (node 0) with only a seeder turned liar by `lie` (node 1), run until the
/// liar is dropped or 120 s: the world and when it stopped.
fn alone_with_a_liar(data: &[u8], cs: usize, lie: Rewrite) -> (World, Time) {
    let mut world = World::new(
        vec![leecher(data, cs), seeder(data, cs, EngineConfig::default())],
        cs as u32,
    );
    world.rewrite(1, lie);
    world.nodes[0].connect(1, Time::ZERO);
    let end = world.run(Time::from_millis(120_000), |n| n[0].peers().count() == 0);
    (world, end)
}

/// The leecher (node 0) with the liar (node 1) and an honest seeder (node 2): it must
/// complete with the right bytes, having asked the liar fewer than 20 times. The requests
/// it made of the liar.
fn beside_an_honest_seeder(data: &[u8], cs: usize, lie: Rewrite) -> u64 {
    let mut world = World::new(
        vec![
            leecher(data, cs),
            seeder(data, cs, EngineConfig::default()),
            seeder(data, cs, EngineConfig::default()),
        ],
        cs as u32,
    );
    world.rewrite(1, lie);
    world.nodes[0].connect(1, Time::ZERO);
    world.nodes[0].connect(2, Time::ZERO);
    world.run(Time::from_millis(120_000), |n| n[0].is_complete());
    assert!(world.nodes[0].is_complete(), "{:?}", world.nodes[0].stats());
    assert_eq!(world.nodes[0].store().bytes(), data);
    let wasted = world.requests(0, 1);
    assert!(wasted < 20, "{wasted} requests to the liar");
    wasted
}

/// Row 8: a peer whose DATA never carries the hashes to verify it is dropped in bounded
/// time, alone or beside an honest seeder, and is not asked again and again meanwhile.
#[test]
fn a_peer_sending_data_without_hashes_is_dropped() {
    let data = content(256 * 1024);
    let cs = 1024;
    // Alone: the fetch ends (the peer is dropped) instead of hanging.
    let (world, end) = alone_with_a_liar(&data, cs, strip_hashes);
    assert!(
        end < Time::from_millis(30_000),
        "still connected at {end:?}"
    );
    assert_eq!(world.nodes[0].stats().chunks_verified, 0);
    // Its unverifiable answers keep their requests (they expire, then one at a time).
    let asked = world.requests(0, 1);
    assert!(
        asked < 20,
        "{asked} requests to the peer that sends no hashes"
    );
    // Beside an honest seeder: complete, with few requests wasted on the liar.
    beside_an_honest_seeder(&data, cs, strip_hashes);
}

/// A store that fails after `ok` writes (a disk that fills up).
struct FillingStore {
    inner: MemoryStore,
    ok: u64,
}

impl ChunkStore for FillingStore {
    fn write_chunk(&mut self, chunk: u64, data: &[u8]) -> Result<(), StoreError> {
        if self.ok == 0 {
            return Err(StoreError::Backend("No space left on device".into()));
        }
        self.ok -= 1;
        self.inner.write_chunk(chunk, data)
    }
    fn read_chunk(&mut self, chunk: u64, out: &mut Vec<u8>) -> Result<bool, StoreError> {
        self.inner.read_chunk(chunk, out)
    }
}

/// Row 12: a failed write is reported as what it is, the engine stops asking (no retry
/// forever), the peer is not blamed, and it goes on once the adapter says so.
#[test]
fn a_full_disk_is_reported_and_nothing_more_is_asked() {
    let data = content(128 * 1024);
    let cs = 1024usize;
    let mut fetcher: Engine<u32, FillingStore> = Engine::new(
        EngineConfig::default(),
        info(&data, cs),
        FillingStore {
            inner: MemoryStore::new(data.len(), cs),
            ok: 10,
        },
        Time::ZERO,
    )
    .unwrap();
    let mut seed = seeder(&data, cs, EngineConfig::default());
    fetcher.connect(1, Time::ZERO);
    let mut now = Time::ZERO;
    let mut failed = Vec::new();
    let mut closed = Vec::new();
    let mut requests_after_failure = 0;
    for step in 0..60_000u64 {
        now = Time::from_millis(step);
        while let Some(t) = poll(&mut fetcher, now) {
            if !failed.is_empty() {
                requests_after_failure += messages_of(&t.payload, cs as u32)
                    .iter()
                    .filter(|m| m.starts_with("Request"))
                    .count();
            }
            seed.handle_datagram(now, 0, &t.payload);
        }
        while let Some(t) = poll(&mut seed, now) {
            fetcher.handle_datagram(now, 1, &t.payload);
        }
        fetcher.handle_timeout(now);
        seed.handle_timeout(now);
        for e in std::iter::from_fn(|| fetcher.poll_event()) {
            match e {
                Event::StoreFailed { chunk, error } => failed.push((chunk, error)),
                Event::PeerClosed { reason, .. } => closed.push(reason),
                _ => {}
            }
        }
        if step == 40_000 {
            assert!(!failed.is_empty());
            fetcher.store_mut().ok = u64::MAX;
            fetcher.resume_storing(now);
        }
        if fetcher.is_complete() {
            break;
        }
    }
    let (_, error) = &failed[0];
    assert!(error.to_string().contains("No space left"), "{error}");
    assert!(closed.is_empty(), "the seeder was blamed: {closed:?}");
    // In-flight requests may still be answered; nothing new was asked until resumed.
    assert!(fetcher.is_complete(), "resumed and finished by {now:?}");
    assert_eq!(fetcher.store().inner.bytes(), &data[..]);
    assert!(
        requests_after_failure < 300,
        "{requests_after_failure} requests after the failure"
    );
}

/// Row 16: a peer list naming our own address makes us open a channel to ourselves; the
/// handshake comes back to us, and the address is dropped for good.
#[test]
fn our_own_address_is_recognised_and_never_tried_again() {
    let data = content(8 * 1024);
    let mut seed = seeder(&data, 1024, EngineConfig::default());
    const ME: u32 = 5;
    seed.connect(ME, Time::ZERO);
    let mut sent = 0;
    for step in 0..100u64 {
        let now = Time::from_millis(step * 10);
        while let Some(t) = poll(&mut seed, now) {
            assert_eq!(t.to, ME);
            sent += 1;
            // What we send to our own address arrives back from it.
            seed.handle_datagram(now, ME, &t.payload);
        }
        seed.handle_timeout(now);
    }
    let evs = events(&mut seed);
    assert!(
        evs.contains(&Event::PeerClosed {
            peer: ME,
            reason: CloseReason::OwnAddress
        }),
        "{evs:?}"
    );
    assert_eq!(sent, 1, "one handshake, then nothing");
    assert_eq!(seed.peers().count(), 0);
    seed.connect(ME, Time::from_millis(2000));
    assert!(poll(&mut seed, Time::from_millis(2000)).is_none());
}

/// A handshake spoofed with an established peer's address does not end its channel; the
/// peer itself opening anew (it restarted) does, once it takes up the answer.
#[test]
fn a_spoofed_handshake_cannot_end_an_established_channel() {
    let data = content(8 * 1024);
    let mut seed = seeder(&data, 1024, EngineConfig::default());
    let ours = raw_channel(&mut seed, 7, 1024);
    seed.handle_datagram(Time::ZERO, 7, &ours.to_be_bytes());
    assert_eq!(seed.peers().count(), 1);
    let root = seed.content().root;
    // The spoofer cannot see the answer, so it never takes it up.
    seed.handle_datagram(Time::from_millis(10), 7, &opening(&root, 0x9999, 1024));
    let answer = poll(&mut seed, Time::from_millis(10)).unwrap();
    seed.handle_timeout(Time::from_millis(20));
    assert_eq!(seed.peers().count(), 1);
    assert!(
        !events(&mut seed)
            .iter()
            .any(|e| matches!(e, Event::PeerClosed { .. }))
    );
    // Had the peer sent it (it restarted), it takes the answer up: the new channel replaces
    // the old one.
    let fresh = answered_channel(&answer.payload, 1024);
    seed.handle_datagram(Time::from_millis(30), 7, &fresh.to_be_bytes());
    assert_eq!(seed.peers().count(), 1);
    let evs = events(&mut seed);
    assert!(
        evs.contains(&Event::PeerClosed {
            peer: 7,
            reason: CloseReason::ClosedByPeer
        }) && evs.contains(&Event::PeerConnected { peer: 7 }),
        "{evs:?}"
    );
}

/// A public peer's PEX names private, link-local, loopback, broadcast and multicast
/// addresses: none is contacted (a fetcher once sent handshakes to 169.254.169.254:80,
/// 127.0.0.1:22 and the LAN); a public address it names is. A peer on the LAN may name
/// LAN peers.
#[test]
fn pex_from_a_public_peer_never_points_us_at_our_lan_or_ourselves() {
    use std::net::SocketAddr;
    let data = content(8 * 1024);
    let cs = 1024u32;
    let discovered = |from: &str, named: &[&str]| -> Vec<SocketAddr> {
        let mut victim: Engine<SocketAddr, MemoryStore> = Engine::new(
            EngineConfig::default(),
            info(&data, cs as usize),
            MemoryStore::new(data.len(), cs as usize),
            Time::ZERO,
        )
        .unwrap();
        let from: SocketAddr = from.parse().unwrap();
        let root = victim.content().root;
        victim.handle_datagram(Time::ZERO, from, &opening(&root, 0x5150, cs));
        let answer = poll(&mut victim, Time::ZERO).unwrap();
        let ch = answered_channel(&answer.payload, cs);
        let mut b = DatagramBuilder::new(ch, &codec(cs));
        for a in named {
            b.push(&match a.parse::<SocketAddr>().unwrap() {
                SocketAddr::V4(v4) => Message::PexResV4(v4),
                SocketAddr::V6(v6) => Message::PexResV6(v6),
            })
            .unwrap();
        }
        victim.handle_datagram(Time::from_millis(1), from, &b.finish());
        let mut found = Vec::new();
        while let Some(e) = victim.poll_event() {
            if let Event::PeerDiscovered { peer } = e {
                found.push(peer);
            }
        }
        // Nothing but the sender is ever sent to.
        while let Some(t) = poll(&mut victim, Time::from_millis(1)) {
            assert!(t.to == from || found.contains(&t.to), "sent to {}", t.to);
        }
        found
    };
    let probes = [
        "10.0.0.1:6778",
        "192.168.1.1:80",
        "172.16.0.1:6778",
        "169.254.169.254:80",
        "255.255.255.255:6778",
        "224.0.0.251:5353",
        "0.0.0.0:6778",
        "127.0.0.1:22",
    ];
    let mut named = probes.to_vec();
    named.push("198.51.100.7:6778");
    assert_eq!(
        discovered("203.0.113.5:7000", &named),
        ["198.51.100.7:6778".parse::<SocketAddr>().unwrap()]
    );
    assert_eq!(
        discovered(
            "192.168.1.2:7000",
            &["192.168.1.3:7000", "224.0.0.251:5353"]
        ),
        ["192.168.1.3:7000".parse::<SocketAddr>().unwrap()]
    );
}

/// Chunks a half-holding withholder says it holds: the first 128.
const WITHHELD_HALF: u64 = 128;

/// A seeder made into a peer that says it holds the first half and never sends a chunk:
/// no DATA (nor the hashes that go with it), and every HAVE cut to that half.
fn withhold_half(bytes: &[u8], cs: u32) -> Vec<u8> {
    rewrite_messages(bytes, cs, |m| match m {
        Message::Data { .. } | Message::Integrity { .. } => None,
        Message::Have(spec) => {
            let (first, last) = spec.chunk_range(cs)?;
            (first < WITHHELD_HALF)
                .then(|| Message::Have(range(first, last.min(WITHHELD_HALF - 1), cs)))
        }
        m => Some(m),
    })
}

/// A peer that says it holds part of the content and never delivers: alone, it is banned
/// as a withholder in bounded time; beside an honest seeder, its silence may be a memory
/// bound letting chunks go (which RFC 7574 cannot say), so it is not banned, but few
/// requests are wasted on it and the content completes.
#[test]
fn a_peer_holding_part_and_never_delivering() {
    let data = content(256 * 1024);
    let cs = 1024;
    let (mut world, end) = alone_with_a_liar(&data, cs, withhold_half);
    assert!(
        end < Time::from_millis(30_000),
        "still connected at {end:?}"
    );
    let banned = events(&mut world.nodes[0]).into_iter().any(|e| {
        matches!(
            e,
            Event::PeerClosed {
                reason: CloseReason::Misbehaving(Misbehaviour::NeverDelivered),
                ..
            }
        )
    });
    assert!(banned, "not banned as a withholder");
    let wasted = beside_an_honest_seeder(&data, cs, withhold_half);
    assert!(
        wasted > 0,
        "the withholder was never asked: the test shows nothing"
    );
}
