//! Learning chunk size and content length from peers, knowing only the root: a
//! [`Discovery`] against real seeder engines over a tiny deterministic network.

mod common;

use common::virtual_net::poll;
use ppspp::engine::{
    Connect, ContentInfo, Discovery, DiscoveryConfigError, DiscoveryEvent, Engine, EngineConfig,
    ProbeFailure,
};
use ppspp::merkle::{Hash, HashAlgorithm, MerkleTree};
use ppspp::store::MemoryStore;
use ppspp::time::Time;
use std::collections::VecDeque;
use std::time::Duration;

/// Node 0 discovers; nodes 1.. are seeders.
struct Swarm {
    discovery: Discovery<u32>,
    seeders: Vec<Engine<u32, MemoryStore>>,
    /// (arrival, from, to, bytes), in sending order; one fixed delay keeps it sorted.
    wire: VecDeque<(Time, u32, u32, Vec<u8>)>,
    now: Time,
    /// Flip the last byte of every datagram longer than 512 bytes from these seeders.
    corrupt: Vec<u32>,
    /// Drop this share of datagrams (per mille), pseudo-randomly.
    loss_per_mille: u64,
    rng: u64,
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
        Swarm {
            discovery,
            seeders,
            wire: VecDeque::new(),
            now: Time::ZERO,
            corrupt: Vec::new(),
            loss_per_mille: 0,
            rng: 0x9E37_79B9_7F4A_7C15,
        }
    }

    fn send(&mut self, from: u32, to: u32, mut bytes: Vec<u8>) {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        if self.rng % 1000 < self.loss_per_mille {
            return;
        }
        if self.corrupt.contains(&from) && bytes.len() > 512 {
            let last = bytes.len() - 1;
            bytes[last] ^= 0x55;
        }
        self.wire.push_back((self.now + DELAY, from, to, bytes));
    }

    /// Runs until discovery has an answer either way or `limit` passes.
    fn run(&mut self, limit: Duration) {
        let end = self.now + limit;
        for peer in 1..=self.seeders.len() as u32 {
            self.discovery.connect(peer, self.now);
        }
        while self.now < end
            && self.discovery.found().is_none()
            && self.discovery.failed().is_none()
        {
            while let Some(t) = poll(&mut self.discovery, self.now) {
                self.send(0, t.to, t.payload);
            }
            for i in 0..self.seeders.len() {
                while let Some(t) = poll(&mut self.seeders[i], self.now) {
                    self.send(i as u32 + 1, t.to, t.payload);
                }
            }
            let mut next = [
                self.discovery.poll_timeout(),
                self.wire.front().map(|w| w.0),
            ]
            .into_iter()
            .flatten()
            .chain(self.seeders.iter().filter_map(|s| s.poll_timeout()))
            .min()
            .unwrap_or(end);
            next = next.max(self.now).min(end);
            self.now = next;
            while self.wire.front().is_some_and(|w| w.0 <= self.now) {
                let (_, from, to, bytes) = self.wire.pop_front().unwrap();
                if to == 0 {
                    self.discovery.handle_datagram(self.now, from, &bytes);
                } else {
                    self.seeders[to as usize - 1].handle_datagram(self.now, from, &bytes);
                }
            }
            self.discovery.handle_timeout(self.now);
            for s in &mut self.seeders {
                s.handle_timeout(self.now);
            }
        }
    }
}

fn discover(content: &[u8], alg: HashAlgorithm, chunk_size: usize) -> Option<ContentInfo> {
    let s = seeder(content, alg, chunk_size);
    let expected = *s.content();
    let mut swarm = Swarm::new(Discovery::new(expected.root, &[], 7).unwrap(), vec![s]);
    swarm.run(Duration::from_secs(30));
    let found = swarm.discovery.found().copied();
    if let Some(f) = found {
        assert_eq!(f, expected, "discovered the wrong description");
        // The driver learns it as one event.
        assert_eq!(
            std::iter::from_fn(|| swarm.discovery.poll_event()).collect::<Vec<_>>(),
            vec![DiscoveryEvent::Found(expected)]
        );
        assert_eq!(swarm.discovery.connect(99, Time::ZERO), Connect::Finished);
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
    let content = data(40 * 8192 + 17, 9);
    for seed in 1..=20u64 {
        let s = seeder(&content, HashAlgorithm::Sha256, 8192);
        let expected = *s.content();
        let mut swarm = Swarm::new(Discovery::new(expected.root, &[], seed).unwrap(), vec![s]);
        swarm.loss_per_mille = 300;
        swarm.rng ^= seed.wrapping_mul(0x2545_F491_4F6C_DD1D);
        swarm.run(Duration::from_secs(90));
        assert_eq!(
            swarm.discovery.found(),
            Some(&expected),
            "network seed {seed}: {:?}",
            swarm.discovery.failed()
        );
    }
}

#[test]
fn a_chunk_size_outside_the_candidates_is_reported() {
    let content = data(10_000, 1);
    let s = seeder(&content, HashAlgorithm::Sha1, 1000);
    let root = s.content().root;
    let mut swarm = Swarm::new(Discovery::new(root, &[1024, 4096], 1).unwrap(), vec![s]);
    swarm.run(Duration::from_secs(120));
    assert!(swarm.discovery.found().is_none());
    let err = swarm.discovery.failed().expect("gave up");
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
        swarm.discovery.poll_event(),
        Some(DiscoveryEvent::AllFailed(err.clone())),
        "the failure is reported once"
    );
    assert_eq!(swarm.discovery.poll_event(), None);
    let text = err.to_string();
    assert!(
        text.contains("no answer") && text.contains("1024, 4096"),
        "{text}"
    );
    // Told the right size, it works.
    let s = seeder(&content, HashAlgorithm::Sha1, 1000);
    let mut swarm = Swarm::new(Discovery::new(root, &[1000], 1).unwrap(), vec![s]);
    swarm.run(Duration::from_secs(30));
    assert_eq!(swarm.discovery.found().map(|c| c.content_len), Some(10_000));
}

#[test]
fn a_wrong_root_finds_nothing() {
    let content = data(10_000, 1);
    let s = seeder(&content, HashAlgorithm::Sha1, 1024);
    let wrong = Hash::from_slice(&[0x42; 20]).unwrap();
    let mut swarm = Swarm::new(Discovery::new(wrong, &[], 1).unwrap(), vec![s]);
    swarm.run(Duration::from_secs(120));
    assert!(swarm.discovery.found().is_none());
    assert!(swarm.discovery.failed().is_some());
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
    swarm.corrupt = vec![1];
    swarm.run(Duration::from_secs(30));
    assert_eq!(swarm.discovery.found(), Some(&expected));

    // Alone, the liar makes discovery fail with a reason.
    let liar = seeder(&content, HashAlgorithm::Sha1, 4096);
    let mut swarm = Swarm::new(Discovery::new(expected.root, &[], 1).unwrap(), vec![liar]);
    swarm.corrupt = vec![1];
    swarm.run(Duration::from_secs(30));
    let err = swarm.discovery.failed().expect("failed");
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
