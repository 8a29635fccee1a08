//! Learning chunk size and content length from peers, knowing only the root: a
//! [`Discovery`] against real seeder engines over a tiny deterministic network.

use crate::common;

use common::virtual_net::{VirtualNet, poll};
use ppspp::engine::{
    Connect, ContentInfo, Discovery, DiscoveryConfigError, DiscoveryEvent, Engine, EngineConfig,
    ProbeFailure, SansIo,
};
use ppspp::merkle::{Hash, HashAlgorithm, MerkleTree};
use ppspp::store::MemoryStore;
use ppspp::time::Time;
use std::time::Duration;

/// Node 0 discovers; nodes 1.. are seeders.
struct Swarm {
    nodes: Vec<Node>,
    net: VirtualNet,
}

/// A node of the swarm: the two kinds of sans-IO peer share one network.
enum Node {
    Finder(Box<Discovery<u32>>),
    Seeder(Box<Engine<u32, MemoryStore>>),
}

impl SansIo for Node {
    type Addr = u32;
    /// The network never reads events; the tests read the finder's from it directly.
    type Event = ();

    fn connect(&mut self, peer: u32, now: Time) -> Connect {
        match self {
            Node::Finder(d) => d.connect(peer, now),
            Node::Seeder(e) => e.connect(peer, now),
        }
    }

    fn peer_lost(&mut self, peer: &u32) {
        match self {
            Node::Finder(d) => d.peer_lost(peer),
            Node::Seeder(e) => e.peer_lost(peer),
        }
    }

    fn handle_datagram(&mut self, now: Time, from: u32, bytes: &[u8]) {
        match self {
            Node::Finder(d) => d.handle_datagram(now, from, bytes),
            Node::Seeder(e) => e.handle_datagram(now, from, bytes),
        }
    }

    fn handle_timeout(&mut self, now: Time) {
        match self {
            Node::Finder(d) => d.handle_timeout(now),
            Node::Seeder(e) => e.handle_timeout(now),
        }
    }

    fn poll_timeout(&self) -> Option<Time> {
        match self {
            Node::Finder(d) => d.poll_timeout(),
            Node::Seeder(e) => e.poll_timeout(),
        }
    }

    fn poll_transmit(&mut self, now: Time, buf: &mut Vec<u8>) -> Option<u32> {
        match self {
            Node::Finder(d) => d.poll_transmit(now, buf),
            Node::Seeder(e) => e.poll_transmit(now, buf),
        }
    }

    fn poll_event(&mut self) -> Option<()> {
        None
    }
}

const DELAY: Duration = Duration::from_millis(10);

fn data(len: usize, salt: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(salt) ^ (i >> 9) as u8)
        .collect()
}

fn seeder(content: &[u8], alg: HashAlgorithm, chunk_size: usize) -> Engine<u32, MemoryStore> {
    let tree = MerkleTree::from_content(alg, chunk_size, content).unwrap();
    Engine::new_seeder(
        EngineConfig::default(),
        &tree,
        MemoryStore::with_content(content.to_vec(), chunk_size),
        Time::ZERO,
    )
    .unwrap()
}

impl Swarm {
    fn new(discovery: Discovery<u32>, seeders: Vec<Engine<u32, MemoryStore>>) -> Swarm {
        let mut nodes = vec![Node::Finder(Box::new(discovery))];
        nodes.extend(seeders.into_iter().map(|s| Node::Seeder(Box::new(s))));
        Swarm {
            nodes,
            net: VirtualNet::new(DELAY, 0, 0x9E37_79B9_7F4A_7C15),
        }
    }

    fn discovery(&self) -> &Discovery<u32> {
        match &self.nodes[0] {
            Node::Finder(d) => d,
            Node::Seeder(_) => unreachable!("node 0 discovers"),
        }
    }

    fn discovery_mut(&mut self) -> &mut Discovery<u32> {
        match &mut self.nodes[0] {
            Node::Finder(d) => d,
            Node::Seeder(_) => unreachable!("node 0 discovers"),
        }
    }

    /// Runs until discovery has an answer either way or `limit` passes.
    fn run(&mut self, limit: Duration) {
        let now = self.net.now;
        for peer in 1..self.nodes.len() as u32 {
            self.discovery_mut().connect(peer, now);
        }
        self.net
            .run(&mut self.nodes, now + limit, |nodes| match &nodes[0] {
                Node::Finder(d) => d.found().is_some() || d.failed().is_some(),
                Node::Seeder(_) => true,
            });
    }
}

fn discover(content: &[u8], alg: HashAlgorithm, chunk_size: usize) -> Option<ContentInfo> {
    let s = seeder(content, alg, chunk_size);
    let expected = *s.content();
    let mut swarm = Swarm::new(Discovery::new(expected.root, &[], 7).unwrap(), vec![s]);
    swarm.run(Duration::from_secs(30));
    let found = swarm.discovery().found().copied();
    if let Some(f) = found {
        assert_eq!(f, expected, "discovered the wrong description");
        // The driver learns it as one event.
        assert_eq!(
            std::iter::from_fn(|| swarm.discovery_mut().poll_event()).collect::<Vec<_>>(),
            vec![DiscoveryEvent::Found(expected)]
        );
        assert_eq!(
            swarm.discovery_mut().connect(99, Time::ZERO),
            Connect::Finished
        );
    }
    found
}

#[test]
fn learns_chunk_size_and_length_for_many_shapes() {
    // One chunk, a power of two (a single peak, no peak hashes sent), short last chunks,
    // exact multiples, several peaks; every candidate chunk size.
    for &cs in &[1024usize, 2048, 4096, 8192, 16_384, 32_768] {
        for &chunks_times_cs in &[1usize, 2, 3, 4, 7, 8, 13, 64] {
            for &tail in &[0usize, 1, cs / 2] {
                let len = (chunks_times_cs - 1) * cs + if tail == 0 { cs } else { tail };
                let content = data(len, cs as u8);
                let found = discover(&content, HashAlgorithm::Sha1, cs);
                assert!(
                    found.is_some(),
                    "nothing found for {len} bytes, chunk size {cs}"
                );
            }
        }
    }
}

#[test]
fn every_hash_function_follows_from_the_root_length() {
    for alg in HashAlgorithm::ALL {
        let content = data(5 * 1024 + 100, 3);
        let found = discover(&content, alg, 1024).expect("found");
        assert_eq!(found.hash, alg);
    }
}

#[test]
fn survives_lost_datagrams() {
    // With 30 % loss each way, all four handshake rounds of a probe go unanswered about
    // one time in fifteen (0.51^4): such a run may fail, but only for want of an answer,
    // and every other run must find the right description.
    let content = data(40 * 8192 + 17, 9);
    let mut unanswered = 0;
    for seed in 1..=20u64 {
        let s = seeder(&content, HashAlgorithm::Sha256, 8192);
        let expected = *s.content();
        let mut swarm = Swarm::new(Discovery::new(expected.root, &[], seed).unwrap(), vec![s]);
        let net_seed = 0x9E37_79B9_7F4A_7C15 ^ seed.wrapping_mul(0x2545_F491_4F6C_DD1D);
        swarm.net = VirtualNet::new(DELAY, 300, net_seed);
        swarm.run(Duration::from_secs(90));
        match swarm.discovery().failed() {
            Some(e) if matches!(e.failures[..], [(_, ProbeFailure::NoAnswer { .. })]) => {
                unanswered += 1;
            }
            failed => assert_eq!(
                swarm.discovery().found(),
                Some(&expected),
                "network seed {seed}: {failed:?}"
            ),
        }
    }
    assert!(
        unanswered <= 3,
        "{unanswered} of 20 runs never got an answer"
    );
}

#[test]
fn a_chunk_size_outside_the_candidates_is_reported() {
    let content = data(10_000, 1);
    let s = seeder(&content, HashAlgorithm::Sha1, 1000);
    let root = s.content().root;
    let mut swarm = Swarm::new(Discovery::new(root, &[1024, 4096], 1).unwrap(), vec![s]);
    swarm.run(Duration::from_secs(120));
    assert!(swarm.discovery().found().is_none());
    let err = swarm.discovery().failed().expect("gave up");
    assert_eq!(
        err.failures,
        vec![(
            1,
            ProbeFailure::NoAnswer {
                chunk_sizes: vec![1024, 4096]
            }
        )]
    );
    assert_eq!(
        swarm.discovery_mut().poll_event(),
        Some(DiscoveryEvent::AllFailed(err.clone())),
        "the failure is reported once"
    );
    assert_eq!(swarm.discovery_mut().poll_event(), None);
    let text = err.to_string();
    assert!(
        text.contains("no answer") && text.contains("1024, 4096"),
        "{text}"
    );
    // Told the right size, it works.
    let s = seeder(&content, HashAlgorithm::Sha1, 1000);
    let mut swarm = Swarm::new(Discovery::new(root, &[1000], 1).unwrap(), vec![s]);
    swarm.run(Duration::from_secs(30));
    assert_eq!(
        swarm.discovery().found().map(|c| c.content_len),
        Some(10_000)
    );
}

#[test]
fn a_wrong_root_finds_nothing() {
    let content = data(10_000, 1);
    let s = seeder(&content, HashAlgorithm::Sha1, 1024);
    let wrong = Hash::from_slice(&[0x42; 20]).unwrap();
    let mut swarm = Swarm::new(Discovery::new(wrong, &[], 1).unwrap(), vec![s]);
    swarm.run(Duration::from_secs(120));
    assert!(swarm.discovery().found().is_none());
    assert!(swarm.discovery().failed().is_some());
}

#[test]
fn a_lying_peer_is_dropped_and_an_honest_one_answers() {
    // Every chunk full, so every DATA datagram is long enough to be corrupted.
    let content = data(20 * 4096, 4);
    let liar = seeder(&content, HashAlgorithm::Sha1, 4096);
    let honest = seeder(&content, HashAlgorithm::Sha1, 4096);
    let expected = *honest.content();
    let mut swarm = Swarm::new(
        Discovery::new(expected.root, &[], 1).unwrap(),
        vec![liar, honest],
    );
    swarm.net.corrupt_from = Some(1);
    swarm.run(Duration::from_secs(30));
    assert_eq!(swarm.discovery().found(), Some(&expected));

    // Alone, the liar makes discovery fail with a reason.
    let liar = seeder(&content, HashAlgorithm::Sha1, 4096);
    let mut swarm = Swarm::new(Discovery::new(expected.root, &[], 1).unwrap(), vec![liar]);
    swarm.net.corrupt_from = Some(1);
    swarm.run(Duration::from_secs(30));
    let err = swarm.discovery().failed().expect("failed");
    assert!(
        matches!(err.failures[..], [(1, ProbeFailure::BadChunk { .. })]),
        "{err:?}"
    );
    assert!(err.to_string().contains("failed verification"), "{err}");
}

#[test]
fn a_root_of_no_known_hash_length_is_refused() {
    let root = Hash::from_slice(&[1; 16]).unwrap();
    assert_eq!(
        Discovery::<u32>::new(root, &[], 1).err(),
        Some(DiscoveryConfigError::RootLength(16))
    );
    let root = Hash::from_slice(&[1; 20]).unwrap();
    assert_eq!(
        Discovery::<u32>::new(root, &[1024, 0], 1).err(),
        Some(DiscoveryConfigError::ZeroChunkSize)
    );
}

#[test]
fn mangled_answers_never_panic_and_never_mislead() {
    // The real answers of a seeder (handshake + HAVE, then peaks + uncles + DATA), with
    // bytes changed, cut or appended; whatever discovery concludes must be true.
    let content = data(13 * 1024 + 300, 5);
    let mut s = seeder(&content, HashAlgorithm::Sha1, 1024);
    let expected = *s.content();
    let mut d = Discovery::new(expected.root, &[], 3).unwrap();
    d.connect(1u32, Time::ZERO);
    let mut answers = Vec::new();
    for _ in 0..3 {
        while let Some(t) = poll(&mut d, Time::ZERO) {
            s.handle_datagram(Time::ZERO, 0, &t.payload);
        }
        while let Some(t) = poll(&mut s, Time::ZERO) {
            answers.push(t.payload.clone());
            d.handle_datagram(Time::ZERO, 1, &t.payload);
        }
    }
    assert_eq!(d.found(), Some(&expected));
    assert!(answers.len() >= 2, "{} answers", answers.len());
    let mut rng = 0x1234_5678_9ABC_DEF1u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for _ in 0..3000 {
        let mut d = Discovery::new(expected.root, &[], 3).unwrap();
        d.connect(1u32, Time::ZERO);
        while poll(&mut d, Time::ZERO).is_some() {}
        for answer in &answers {
            let mut bytes = answer.clone();
            match next() % 3 {
                0 => {
                    let i = (next() as usize) % bytes.len();
                    bytes[i] ^= 1 << (next() % 8);
                }
                1 => bytes.truncate((next() as usize) % bytes.len()),
                _ => bytes.extend((0..next() % 40).map(|_| next() as u8)),
            }
            d.handle_datagram(Time::ZERO, 1, &bytes);
            while poll(&mut d, Time::ZERO).is_some() {}
        }
        if let Some(found) = d.found() {
            assert_eq!(found, &expected);
        }
    }
}

#[test]
fn a_full_seeder_refuses_and_discovery_asks_again_until_there_is_room() {
    let content = data(6 * 1024 + 3, 4);
    let tree = MerkleTree::from_content(HashAlgorithm::Sha1, 1024, &content).unwrap();
    let full = Engine::new_seeder(
        EngineConfig {
            max_peers: 1,
            ..EngineConfig::default()
        },
        &tree,
        MemoryStore::with_content(content.clone(), 1024),
        Time::ZERO,
    )
    .unwrap();
    let expected = *full.content();
    // Node 1 is the full seeder; node 2, a leecher, holds its only slot.
    let mut holder = Engine::new(
        EngineConfig::default(),
        expected,
        MemoryStore::new(content.len(), 1024),
        Time::ZERO,
    )
    .unwrap();
    holder.connect(1, Time::ZERO);
    let mut swarm = Swarm::new(Discovery::new(expected.root, &[], 5).unwrap(), vec![full]);
    swarm.nodes.push(Node::Seeder(Box::new(holder)));
    swarm
        .net
        .run(&mut swarm.nodes, Time::from_millis(200), |_| false);
    // Refused, it neither finds nor fails while the seeder stays full (it asks the seeder
    // alone: the holder could describe the content too).
    let now = swarm.net.now;
    swarm.discovery_mut().connect(1, now);
    swarm
        .net
        .run(&mut swarm.nodes, now + Duration::from_secs(20), |_| false);
    assert!(swarm.discovery().found().is_none());
    assert!(
        swarm.discovery().failed().is_none(),
        "a refusal is not a failure: {:?}",
        swarm.discovery().failed()
    );
    // The holder leaves; the next time discovery asks, the seeder has room.
    if let Node::Seeder(h) = &mut swarm.nodes[2] {
        h.close_all();
    }
    let now = swarm.net.now;
    swarm.net.run(
        &mut swarm.nodes,
        now + Duration::from_secs(60),
        |nodes| match &nodes[0] {
            Node::Finder(d) => d.found().is_some() || d.failed().is_some(),
            Node::Seeder(_) => true,
        },
    );
    assert_eq!(swarm.discovery().found(), Some(&expected));
}
