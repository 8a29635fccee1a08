//! Interoperability with libswift, from a recorded real session in which one libswift
//! peer fetched m74.jpg from another (`tests/vectors/libswift-m74-session.json`).
//!
//! The seeder's datagrams are replayed into our leecher engine, with only the destination
//! channel ID rewritten to the one our engine chose: our engine must accept libswift's
//! handshake answer, its HAVEs, its peak and uncle hashes, and verify every chunk.

use crate::common;

use common::virtual_net::poll;

use ppspp::codec::{CodecConfig, Message, decode_datagram};
use ppspp::engine::{ContentInfo, Engine, EngineConfig, Event};
use ppspp::merkle::{Hash, HashAlgorithm};
use ppspp::store::MemoryStore;
use ppspp::time::Time;

const SEEDER: u32 = 1;

struct Recorded {
    from_seeder: bool,
    t_us: u64,
    bytes: Vec<u8>,
}

fn session() -> Vec<Recorded> {
    let json = common::load_json("libswift-m74-session.json");
    json["datagrams"]
        .as_array()
        .expect("datagrams")
        .iter()
        .map(|d| Recorded {
            from_seeder: d["from"] == "seeder",
            t_us: (d["t_ms"].as_f64().expect("t_ms") * 1000.0) as u64,
            bytes: common::unhex(d["hex"].as_str().expect("hex")),
        })
        .collect()
}

/// The hashes of `hashes` that are uncles of `leaf` (what a receiver verifies it with).
fn on_path(hashes: &[(ppspp::Bin, Hash)], leaf: ppspp::Bin) -> Vec<(ppspp::Bin, Hash)> {
    hashes
        .iter()
        .filter(|(b, _)| !b.contains(leaf) && b.parent().contains(leaf))
        .copied()
        .collect()
}

fn m74_info() -> ContentInfo {
    ContentInfo {
        root: Hash::from_hex("c89800bfc82ed01ed6e3bfd5408c51274491f7d4").unwrap(),
        hash: HashAlgorithm::Sha1,
        chunk_size: 1024,
        content_len: 26_121,
    }
}

#[test]
fn our_leecher_verifies_everything_a_libswift_seeder_sends() {
    let content = common::read_vector_file("m74.jpg");
    let mut leecher: Engine<u32, MemoryStore> = Engine::new(
        EngineConfig::default(),
        m74_info(),
        MemoryStore::new(content.len(), 1024),
        Time::ZERO,
    )
    .unwrap();
    leecher.connect(SEEDER, Time::ZERO);
    let opening = poll(&mut leecher, Time::ZERO).expect("opening handshake");
    // Our opening handshake names the swarm exactly as libswift's did.
    let config = CodecConfig::default();
    let our_id = match decode_datagram(&opening.payload, &config)
        .unwrap()
        .collect_messages()
        .unwrap()[0]
    {
        Message::Handshake(h) => {
            assert_eq!(h.options.swarm_id, Some(m74_info().root.as_bytes()));
            h.source_channel
        }
        ref other => panic!("expected a handshake, got {other:?}"),
    };
    let mut sent_back = 0;
    for d in session().into_iter().filter(|d| d.from_seeder) {
        let mut bytes = d.bytes.clone();
        bytes[..4].copy_from_slice(&our_id.to_be_bytes());
        let now = Time::from_micros(d.t_us);
        leecher.handle_datagram(now, SEEDER, &bytes);
        while let Some(t) = poll(&mut leecher, now) {
            assert_eq!(t.to, SEEDER);
            // Everything we answer decodes, addressed to libswift's channel.
            let dg = decode_datagram(&t.payload, &config).unwrap();
            assert_eq!(dg.channel, 0x9f12_e6ab);
            dg.collect_messages().unwrap();
            sent_back += 1;
        }
    }
    let events: Vec<Event<u32>> = std::iter::from_fn(|| leecher.poll_event()).collect();
    assert!(events.contains(&Event::PeerConnected { peer: SEEDER }));
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, Event::ChunkRejected { .. })),
        "{events:?}"
    );
    assert!(leecher.is_complete(), "{:?}", leecher.stats());
    assert!(events.contains(&Event::Complete));
    assert_eq!(leecher.store().bytes(), &content[..]);
    assert_eq!(leecher.stats().chunks_verified, 26);
    assert!(sent_back > 0);
}

#[test]
fn our_seeder_answers_a_libswift_leecher() {
    let content = common::read_vector_file("m74.jpg");
    let tree =
        ppspp::merkle::MerkleTree::from_content(HashAlgorithm::Sha1, 1024, &content).unwrap();
    let mut seeder: Engine<u32, MemoryStore> = Engine::new_seeder(
        EngineConfig::default(),
        &tree,
        MemoryStore::with_content(content.clone(), 1024),
        Time::ZERO,
    )
    .unwrap();
    let leecher_msgs: Vec<Recorded> = session().into_iter().filter(|d| !d.from_seeder).collect();
    // libswift's opening handshake goes to channel 0 unchanged.
    let now = Time::from_micros(leecher_msgs[0].t_us);
    seeder.handle_datagram(now, 2, &leecher_msgs[0].bytes);
    let reply = poll(&mut seeder, now).expect("handshake answer");
    let config = CodecConfig::default();
    let dg = decode_datagram(&reply.payload, &config).unwrap();
    assert_eq!(dg.channel, 0x9f32_965a, "answer goes to libswift's channel");
    let msgs = dg.collect_messages().unwrap();
    let Message::Handshake(h) = &msgs[0] else {
        panic!("expected a handshake first: {msgs:?}")
    };
    let our_id = h.source_channel;
    // Like libswift's own answer: HAVEs of the peaks follow the handshake.
    let haves: Vec<_> = msgs[1..]
        .iter()
        .filter_map(|m| match m {
            Message::Have(spec) => spec.chunk_range(1024),
            _ => None,
        })
        .collect();
    assert_eq!(haves, [(0, 15), (16, 23), (24, 25)]);

    // Replay the leecher's requests; our DATA must verify at a fresh receiver that knows
    // only the root (as the libswift leecher did).
    let mut verifier =
        ppspp::merkle::VerifyingTree::new(HashAlgorithm::Sha1, tree.root(), 1024, 26_121).unwrap();
    let mut verified = 0;
    for d in &leecher_msgs[1..] {
        let mut bytes = d.bytes.clone();
        bytes[..4].copy_from_slice(&our_id.to_be_bytes());
        // The recorded leecher acknowledges what libswift's seeder sent it; our seeder
        // prunes hashes by those claims, so our verifier must know those chunks too.
        for m in decode_datagram(&bytes, &config)
            .unwrap()
            .collect_messages()
            .unwrap()
        {
            let spec = match m {
                Message::Ack { chunks, .. } | Message::Have(chunks) => chunks,
                _ => continue,
            };
            let (first, last) = spec.chunk_range(1024).unwrap();
            for c in first..=last.min(25) {
                if !verifier.is_verified(ppspp::Bin::chunk(c).unwrap()) {
                    let span = c as usize * 1024..(c as usize * 1024 + 1024).min(content.len());
                    verifier
                        .verify_chunk(c, &content[span], &tree.uncles(c, |_| false))
                        .unwrap();
                }
            }
        }
        let now = Time::from_micros(d.t_us);
        seeder.handle_datagram(now, 2, &bytes);
        seeder.handle_timeout(now);
        while let Some(t) = poll(&mut seeder, now) {
            let dg = decode_datagram(&t.payload, &config).unwrap();
            let mut hashes = Vec::new();
            for m in dg.collect_messages().unwrap() {
                match m {
                    Message::Integrity { chunks, hash } => {
                        let bin = chunks.bins(1024).next().unwrap();
                        hashes.push((bin, Hash::from_slice(hash).unwrap()));
                    }
                    Message::Data {
                        chunks, payload, ..
                    } => {
                        let (c, _) = chunks.chunk_range(1024).unwrap();
                        let peaks: Vec<_> = ppspp::Bin::peaks(26)
                            .filter_map(|p| hashes.iter().find(|(b, _)| *b == p).copied())
                            .collect();
                        if peaks.len() == 3 && !verifier.is_verified(peaks[0].0) {
                            verifier.add_peaks(&peaks).unwrap();
                        }
                        let leaf = ppspp::Bin::chunk(c).unwrap();
                        let uncles = on_path(&hashes, leaf);
                        verifier.verify_chunk(c, payload, &uncles).unwrap();
                        verified += 1;
                    }
                    _ => {}
                }
            }
        }
    }
    // The recorded leecher soon acknowledges everything libswift's seeder sent it, so ours
    // serves only what was asked and not yet acknowledged; every one of those verified.
    assert!(verified >= 1, "served and verified {verified} chunks");
}

/// What one captured libswift session says: the seeder's port and, per DATA it sent, the
/// INTEGRITY bins that preceded it in the same datagram.
struct Capture {
    seeder_port: u16,
    datagrams: Vec<common::Captured>,
    content: Vec<u8>,
}

impl Capture {
    /// What libswift's seeder sent, per DATA: (chunk, INTEGRITY bins before it, timestamp).
    fn seeder_data(&self) -> Vec<(u64, Vec<ppspp::Bin>, u64)> {
        self.datagrams
            .iter()
            .filter(|d| d.src_port == self.seeder_port)
            .filter_map(|d| data_with_hashes(&d.payload))
            .collect()
    }
}

fn capture(name: &str) -> Capture {
    let datagrams = common::read_pcap(name);
    let config = CodecConfig::default();
    let mut seeder_port = 0;
    let mut chunks: std::collections::BTreeMap<u64, Vec<u8>> = Default::default();
    for d in &datagrams {
        for m in decode_datagram(&d.payload, &config)
            .unwrap()
            .messages()
            .map(Result::unwrap)
        {
            if let Message::Data {
                chunks: spec,
                payload,
                ..
            } = m
            {
                seeder_port = d.src_port;
                chunks.insert(spec.chunk_range(1024).unwrap().0, payload.to_vec());
            }
        }
    }
    let content = chunks.into_values().flatten().collect();
    Capture {
        seeder_port,
        datagrams,
        content,
    }
}

/// Per DATA datagram: (chunk, INTEGRITY bins before it, timestamp).
fn data_with_hashes(payload: &[u8]) -> Option<(u64, Vec<ppspp::Bin>, u64)> {
    let config = CodecConfig::default();
    let mut bins = Vec::new();
    for m in decode_datagram(payload, &config)
        .unwrap()
        .messages()
        .map(Result::unwrap)
    {
        match m {
            Message::Integrity { chunks, .. } => bins.push(chunks.bins(1024).next().unwrap()),
            Message::Data {
                chunks, timestamp, ..
            } => return Some((chunks.chunk_range(1024).unwrap().0, bins, timestamp)),
            _ => {}
        }
    }
    None
}

/// What our seeder sends a libswift leecher whose datagrams are replayed from a capture at
/// their recorded times: (chunk, INTEGRITY bins, timestamp) per DATA, every chunk checked
/// against a receiver that, like libswift's, knows only the root.
fn serve_recorded_leecher(
    cap: &Capture,
    wall_clock: core::time::Duration,
) -> Vec<(u64, Vec<ppspp::Bin>, u64)> {
    let tree =
        ppspp::merkle::MerkleTree::from_content(HashAlgorithm::Sha1, 1024, &cap.content).unwrap();
    let config = EngineConfig {
        wall_clock_offset: wall_clock,
        ..EngineConfig::default()
    };
    let mut seeder: Engine<u32, MemoryStore> = Engine::new_seeder(
        config,
        &tree,
        MemoryStore::with_content(cap.content.clone(), 1024),
        Time::ZERO,
    )
    .unwrap();
    let mut verifier = ppspp::merkle::VerifyingTree::new(
        HashAlgorithm::Sha1,
        tree.root(),
        1024,
        cap.content.len() as u64,
    )
    .unwrap();
    let codec = CodecConfig::default();
    let mut our_id = None;
    let mut sent = Vec::new();
    for d in cap
        .datagrams
        .iter()
        .filter(|d| d.src_port != cap.seeder_port)
    {
        let now = Time::from_micros((d.t * 1e6) as u64);
        let mut bytes = d.payload.clone();
        if let Some(id) = our_id {
            bytes[..4].copy_from_slice(&u32::to_be_bytes(id));
        }
        seeder.handle_datagram(now, 2, &bytes);
        seeder.handle_timeout(now);
        while let Some(t) = poll(&mut seeder, now) {
            let dg = decode_datagram(&t.payload, &codec).unwrap();
            let mut hashes = Vec::new();
            for m in dg.messages().map(Result::unwrap) {
                match m {
                    Message::Handshake(h) if our_id.is_none() => our_id = Some(h.source_channel),
                    Message::Integrity { chunks, hash } => {
                        hashes.push((
                            chunks.bins(1024).next().unwrap(),
                            Hash::from_slice(hash).unwrap(),
                        ));
                    }
                    Message::Data {
                        chunks, payload, ..
                    } => {
                        let (c, _) = chunks.chunk_range(1024).unwrap();
                        let leaf = ppspp::Bin::chunk(c).unwrap();
                        let uncles = on_path(&hashes, leaf);
                        if !verifier.is_verified(leaf) {
                            verifier
                                .verify_chunk(c, payload, &uncles)
                                .unwrap_or_else(|e| panic!("chunk {c}: {e}"));
                        }
                    }
                    _ => {}
                }
            }
            if let Some(data) = data_with_hashes(&t.payload) {
                sent.push(data);
            }
        }
    }
    sent
}

/// Rows 13 and 15: for content with a single peak (chunk count a power of two) libswift's
/// leecher waits for the peak's hash (the root) before the first DATA, and libswift's
/// seeder sends each hash about once. Ours must do as libswift's does.
#[test]
fn a_libswift_leecher_gets_the_hashes_libswift_sends() {
    for name in [
        "libswift-single-peak-1-chunk.pcap",
        "libswift-single-peak-1024-chunks.pcap",
    ] {
        let cap = capture(name);
        let theirs = cap.seeder_data();
        let ours = serve_recorded_leecher(&cap, core::time::Duration::ZERO);
        let chunks = (cap.content.len() as u64).div_ceil(1024);
        // The first DATA comes after the same hashes: the root (the single peak) first.
        assert_eq!(ours[0].0, theirs[0].0, "{name}");
        assert_eq!(
            ours[0].1, theirs[0].1,
            "{name}: hashes before the first DATA"
        );
        assert_eq!(
            ours[0].1[0],
            ppspp::Bin::covering(chunks).unwrap(),
            "{name}"
        );
        // Every chunk once: the recorded leecher asked for each once.
        let mut served: Vec<u64> = ours.iter().map(|d| d.0).collect();
        served.sort_unstable();
        served.dedup();
        assert_eq!(served.len() as u64, chunks, "{name}: chunks served");
        assert_eq!(ours.len() as u64, chunks, "{name}: duplicate DATA");
        let hashes = |s: &[(u64, Vec<ppspp::Bin>, u64)]| s.iter().map(|d| d.1.len()).sum::<usize>();
        let (our_hashes, their_hashes) = (hashes(&ours), hashes(&theirs));
        assert!(
            our_hashes as f64 <= 1.25 * their_hashes as f64,
            "{name}: {our_hashes} INTEGRITY for {} DATA; libswift sent {their_hashes} for {}",
            ours.len(),
            theirs.len()
        );
    }
}

/// Row 14: DATA timestamps count microseconds from the Unix epoch, as libswift's do; and a
/// libswift seeder's timestamps give our leecher one-way delays of the path's size, not
/// of the clocks' epochs apart.
#[test]
fn timestamps_count_from_the_unix_epoch_like_libswift() {
    let cap = capture("libswift-single-peak-1024-chunks.pcap");
    let theirs = cap.seeder_data();
    // Our clock, set to the capture's wall clock at its start.
    let start = theirs[0].2
        - (cap
            .datagrams
            .iter()
            .find(|d| data_with_hashes(&d.payload).is_some())
            .unwrap()
            .t
            * 1e6) as u64;
    let wall = core::time::Duration::from_micros(start);
    let ours = serve_recorded_leecher(&cap, wall);
    for ((_, _, mine), (_, _, recorded)) in ours.iter().zip(&theirs).take(50) {
        let apart = mine.abs_diff(*recorded);
        assert!(
            apart < 1_000_000,
            "our timestamp {mine}, libswift's {recorded}"
        );
    }

    // Our leecher fed the m74 seeder's datagrams: every ACK's delay sample is small.
    let content = common::read_vector_file("m74.jpg");
    let json = session();
    let first_data = json
        .iter()
        .filter(|d| d.from_seeder)
        .find_map(|d| data_with_hashes(&d.bytes).map(|(_, _, ts)| (d.t_us, ts)))
        .unwrap();
    let config = EngineConfig {
        wall_clock_offset: core::time::Duration::from_micros(first_data.1 - first_data.0),
        ..EngineConfig::default()
    };
    let mut leecher: Engine<u32, MemoryStore> = Engine::new(
        config,
        m74_info(),
        MemoryStore::new(content.len(), 1024),
        Time::ZERO,
    )
    .unwrap();
    leecher.connect(SEEDER, Time::ZERO);
    let opening = poll(&mut leecher, Time::ZERO).unwrap();
    let our_id = match decode_datagram(&opening.payload, &CodecConfig::default())
        .unwrap()
        .collect_messages()
        .unwrap()[0]
    {
        Message::Handshake(ref h) => h.source_channel,
        _ => unreachable!(),
    };
    let mut delays = Vec::new();
    for d in json.into_iter().filter(|d| d.from_seeder) {
        let mut bytes = d.bytes.clone();
        bytes[..4].copy_from_slice(&our_id.to_be_bytes());
        let now = Time::from_micros(d.t_us);
        leecher.handle_datagram(now, SEEDER, &bytes);
        while let Some(t) = poll(&mut leecher, now) {
            for m in decode_datagram(&t.payload, &CodecConfig::default())
                .unwrap()
                .collect_messages()
                .unwrap()
            {
                if let Message::Ack { delay_us, .. } = m {
                    delays.push(delay_us);
                }
            }
        }
    }
    assert!(!delays.is_empty());
    assert!(
        // The calibration above is only as exact as the capture's times (a few µs).
        delays.iter().all(|d| (-1000..1_000_000).contains(d)),
        "delay samples {delays:?}"
    );
}

/// A libswift leecher on a fast path asks for a whole 5,000,000-byte file within its first
/// millisecond (`libswift-leecher-requests-5mb.pcap`: its first 22 datagrams to our seeder,
/// 18 REQUESTs covering all 4,883 chunks) and asks again only when its picker gives up on
/// them, 2 s later. Our seeder must serve every chunk from those requests alone: it once
/// queued the first 4,096 and dropped the rest, so the leecher sat idle for 2 s.
#[test]
fn a_libswift_leecher_that_asks_for_the_whole_file_at_once_gets_all_of_it() {
    const LEN: usize = 5_000_000;
    const CHUNKS: u64 = (LEN as u64).div_ceil(1024);
    let mut rng = ppspp::rng::Rng::new(7);
    let content: Vec<u8> = (0..LEN).map(|_| rng.next_u64() as u8).collect();
    let tree =
        ppspp::merkle::MerkleTree::from_content(HashAlgorithm::Sha1, 1024, &content).unwrap();
    let mut seeder: Engine<u32, MemoryStore> = Engine::new_seeder(
        EngineConfig::default(),
        &tree,
        MemoryStore::with_content(content, 1024),
        Time::ZERO,
    )
    .unwrap();
    let codec = CodecConfig::default();
    // The recorded requests, with the handshake naming this content's root: the HAVEs and
    // ACKs beside them are left out, this leecher acknowledges what our seeder sends it.
    let root = tree.root();
    let mut replay: Vec<(Time, Vec<u8>)> = Vec::new();
    let mut requested = 0;
    for d in common::read_pcap("libswift-leecher-requests-5mb.pcap") {
        let dg = decode_datagram(&d.payload, &codec).unwrap();
        let kept: Vec<Message> = dg
            .collect_messages()
            .unwrap()
            .into_iter()
            .filter_map(|m| match m {
                Message::Handshake(mut h) => {
                    h.options.swarm_id = Some(root.as_bytes());
                    Some(Message::Handshake(h))
                }
                Message::Request(spec) => {
                    let (first, last) = spec.chunk_range(1024).unwrap();
                    requested += last - first + 1;
                    Some(Message::Request(spec))
                }
                m @ Message::PexReq => Some(m),
                _ => None,
            })
            .collect();
        if kept.is_empty() {
            continue;
        }
        let mut bytes = Vec::new();
        ppspp::codec::encode_datagram(dg.channel, &kept, &codec, &mut bytes).unwrap();
        replay.push((Time::from_micros((d.t * 1e6) as u64), bytes));
    }
    assert_eq!(
        requested, CHUNKS,
        "the recorded leecher asks for every chunk"
    );

    // Loopback: each datagram arrives 20 µs after it was sent; every DATA is acknowledged
    // (with a HAVE, as libswift does) as it arrives.
    let one_way = core::time::Duration::from_micros(20);
    let deadline = Time::from_micros(1_000_000);
    let mut to_seeder: std::collections::VecDeque<(Time, Vec<u8>)> = replay.into();
    let mut our_id = None;
    let mut served = ppspp::binmap::Binmap::new();
    let mut data_sent = 0u64;
    let mut now = Time::ZERO;
    while now <= deadline {
        while let Some((at, _)) = to_seeder.front()
            && *at <= now
        {
            let (_, mut bytes) = to_seeder.pop_front().unwrap();
            if let Some(id) = our_id {
                bytes[..4].copy_from_slice(&u32::to_be_bytes(id));
            }
            seeder.handle_datagram(now, 2, &bytes);
        }
        seeder.handle_timeout(now);
        while let Some(t) = poll(&mut seeder, now) {
            let dg = decode_datagram(&t.payload, &codec).unwrap();
            for m in dg.messages().map(Result::unwrap) {
                match m {
                    Message::Handshake(h) if our_id.is_none() => our_id = Some(h.source_channel),
                    Message::Data { chunks, .. } => {
                        let (c, _) = chunks.chunk_range(1024).unwrap();
                        served.set(ppspp::Bin::chunk(c).unwrap());
                        data_sent += 1;
                        let spec = ppspp::codec::ChunkSpec::Chunk32 {
                            start: c as u32,
                            end: c as u32,
                        };
                        let mut ack = Vec::new();
                        ppspp::codec::encode_datagram(
                            our_id.unwrap_or(0),
                            &[
                                Message::Have(spec),
                                Message::Ack {
                                    chunks: spec,
                                    delay_us: 30,
                                },
                            ],
                            &codec,
                            &mut ack,
                        )
                        .unwrap();
                        let at = now + one_way + one_way;
                        let i = to_seeder.partition_point(|(t, _)| *t <= at);
                        to_seeder.insert(i, (at, ack));
                    }
                    _ => {}
                }
            }
        }
        let next_timer = seeder.poll_timeout().unwrap_or(deadline);
        let next_in = to_seeder.front().map_or(deadline, |(t, _)| *t);
        let next = next_timer.min(next_in).min(deadline);
        now = if next > now {
            next
        } else if now == deadline {
            break;
        } else {
            now + core::time::Duration::from_micros(1)
        };
    }
    let missing: Vec<u64> = (0..CHUNKS)
        .filter(|&c| !served.is_filled(ppspp::Bin::chunk(c).unwrap()))
        .collect();
    assert!(
        missing.is_empty(),
        "{} of {CHUNKS} requested chunks never sent within 1 s, the first {:?}",
        missing.len(),
        &missing[..missing.len().min(5)]
    );
    assert_eq!(data_sent, CHUNKS, "a lossless path needs no chunk twice");
}
