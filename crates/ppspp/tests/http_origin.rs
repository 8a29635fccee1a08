//! The engine with an HTTP origin: a content file and its tree file served by Range
//! requests with a fixed latency, alone or next to peers on the virtual network.

use crate::common;

use common::engines::{events, leecher_with};
use common::virtual_net::VirtualNet as Net;
use ppspp::engine::{
    Engine, EngineConfig, Event, HttpOriginConfig, OriginError, OriginFile, OriginRequest,
    PickerKind,
};
use ppspp::merkle::tree_file::encode_file;
use ppspp::merkle::{HashAlgorithm, MerkleTree};
use ppspp::store::MemoryStore;
use ppspp::time::Time;
use std::time::Duration;

type Node = Engine<u32, MemoryStore>;

const CS: usize = 1024;

fn content(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 13 + i / 999) as u8).collect()
}

fn tree_file(tree: &MerkleTree, group_layer: u32) -> Vec<u8> {
    encode_file(tree, group_layer).unwrap()
}

fn leecher(tree: &MerkleTree, picker: PickerKind, seed: u64) -> Node {
    leecher_with(
        tree,
        EngineConfig {
            seed,
            picker,
            ..EngineConfig::default()
        },
    )
}

fn seeder(tree: &MerkleTree, data: &[u8]) -> Node {
    Engine::new_seeder(
        EngineConfig {
            seed: 1,
            ..EngineConfig::default()
        },
        tree,
        MemoryStore::with_content(data.to_vec(), tree.chunk_size()),
        Time::ZERO,
    )
    .unwrap()
}

/// How the fake server answers one request: the bytes, or a failure.
type Answer = Result<Vec<u8>, OriginError>;

/// Overrides the server's answer to a request (a failure, a short body), or `None`.
type Misbehave = Box<dyn FnMut(&OriginRequest) -> Option<Answer>>;

/// A web server holding the content and its tree file, answering after `latency`.
struct Server {
    content: Vec<u8>,
    tree: Vec<u8>,
    latency: Duration,
    /// Answers not yet delivered: (due, request id, answer).
    pending: Vec<(Time, u64, Answer)>,
    misbehave: Misbehave,
    requests: Vec<OriginRequest>,
    content_bytes: u64,
    most_in_flight: usize,
}

impl Server {
    fn new(content: &[u8], tree: Vec<u8>) -> Server {
        Server {
            content: content.to_vec(),
            tree,
            latency: Duration::from_millis(20),
            pending: Vec::new(),
            misbehave: Box::new(|_| None),
            requests: Vec::new(),
            content_bytes: 0,
            most_in_flight: 0,
        }
    }

    /// Takes the node's requests, and delivers the answers due by `now`.
    fn step(&mut self, node: &mut Node, now: Time) {
        while let Some(r) = node.poll_origin_request(now) {
            assert!(r.range.start < r.range.end, "empty range {r:?}");
            let answer = (self.misbehave)(&r).unwrap_or_else(|| {
                let file = match r.file {
                    OriginFile::Tree => &self.tree,
                    OriginFile::Content => &self.content,
                };
                // A server clips a range to the file's end.
                let end = (r.range.end as usize).min(file.len());
                Ok(file[r.range.start as usize..end].to_vec())
            });
            if let (OriginFile::Content, Ok(b)) = (r.file, &answer) {
                self.content_bytes += b.len() as u64;
            }
            self.pending.push((now + self.latency, r.id, answer));
            self.requests.push(r);
            self.most_in_flight = self.most_in_flight.max(self.pending.len());
        }
        let (due, later): (Vec<_>, Vec<_>) = self.pending.drain(..).partition(|p| p.0 <= now);
        self.pending = later;
        for (_, id, answer) in due {
            match answer {
                Ok(bytes) => node.handle_origin_response(now, id, &bytes),
                Err(e) => node.handle_origin_failure(now, id, e),
            }
        }
    }
}

/// Runs node 0 (and any others) with `server` until `limit`; returns the time reached.
fn run_alone(nodes: &mut [Node], net: &mut Net, server: &mut Server, limit: Time) -> Time {
    run(nodes, net, server, 0, limit, |_| false)
}

/// Runs `nodes` on `net`, with `origin_node` talking to `server`, in 2 ms steps until
/// `done` or `limit`.
fn run(
    nodes: &mut [Node],
    net: &mut Net,
    server: &mut Server,
    origin_node: usize,
    limit: Time,
    done: impl Fn(&[Node]) -> bool,
) -> Time {
    let mut now = net.now;
    while now < limit && !done(nodes) {
        server.step(&mut nodes[origin_node], now);
        net.drain(now, origin_node as u32, &mut nodes[origin_node]);
        net.run(nodes, now + Duration::from_millis(2), |_| false);
        now = net.now;
    }
    now
}

/// Runs `nodes` on `net` until `limit` in 2 ms steps, each with its own web server.
fn run_each(nodes: &mut [Node], servers: &mut [Server], net: &mut Net, limit: Time) {
    while net.now < limit {
        let now = net.now;
        for (i, (node, server)) in nodes.iter_mut().zip(servers.iter_mut()).enumerate() {
            server.step(node, now);
            net.drain(now, i as u32, node);
        }
        net.run(nodes, now + Duration::from_millis(2), |_| false);
    }
}

fn origin_config() -> HttpOriginConfig {
    HttpOriginConfig {
        alone_after: Duration::ZERO,
        ..HttpOriginConfig::default()
    }
}

#[test]
fn http_only_fetches_a_whole_file_once_within_the_request_limit() {
    let data = content(700 * CS + 123);
    let tree = MerkleTree::from_content(HashAlgorithm::Sha256, CS, &data).unwrap();
    let mut server = Server::new(&data, tree_file(&tree, 6));
    let mut nodes = vec![leecher(&tree, PickerKind::RarestFirst, 2)];
    nodes[0].enable_http_origin(origin_config(), Time::ZERO);
    let mut net = Net::new(Duration::from_millis(5), 0, 1);
    let end = run(
        &mut nodes,
        &mut net,
        &mut server,
        0,
        Time::from_millis(30_000),
        |n| n[0].is_complete(),
    );
    assert!(
        nodes[0].is_complete(),
        "incomplete at {end:?}: {:?}",
        nodes[0].stats()
    );
    assert_eq!(nodes[0].store().bytes(), &data[..]);
    assert_eq!(
        server.content_bytes,
        data.len() as u64,
        "each byte fetched once"
    );
    assert!(server.most_in_flight <= HttpOriginConfig::default().max_requests);
    let stats = nodes[0].stats();
    assert_eq!(stats.bytes_from_origin, data.len() as u64);
    assert_eq!(stats.origin_requests, server.requests.len() as u64);
    let ev = events(&mut nodes[0]);
    let from_origin = ev
        .iter()
        .filter(|e| matches!(e, Event::ChunkFromOrigin { .. }))
        .count() as u64;
    assert_eq!(from_origin, nodes[0].chunk_count());
    assert!(ev.contains(&Event::Complete));
    // Every content request is whole chunks within the size limit.
    for r in server
        .requests
        .iter()
        .filter(|r| r.file == OriginFile::Content)
    {
        assert_eq!(r.range.start % CS as u64, 0);
        assert!(r.range.end % CS as u64 == 0 || r.range.end == data.len() as u64);
        assert!(r.range.end - r.range.start <= HttpOriginConfig::default().max_request_bytes);
    }
    assert!(
        nodes[0].poll_origin_request(end).is_none(),
        "nothing left to ask"
    );
}

#[test]
fn http_only_video_follows_the_playhead() {
    let data = content(2000 * CS);
    let tree = MerkleTree::from_content(HashAlgorithm::Sha256, CS, &data).unwrap();
    let mut server = Server::new(&data, tree_file(&tree, 6));
    let mut nodes = vec![leecher(&tree, PickerKind::Vod { window: 256 }, 2)];
    nodes[0].enable_http_origin(origin_config(), Time::ZERO);
    let mut net = Net::new(Duration::from_millis(5), 0, 1);
    run_alone(&mut nodes, &mut net, &mut server, Time::from_millis(2_000));
    // Alone from the start: the whole urgent window, and nothing past it.
    let have = nodes[0].have().count_filled();
    assert_eq!(have, 256, "the in-order window only");
    // Playback moves on: the origin follows.
    nodes[0].set_playhead(1500);
    run_alone(&mut nodes, &mut net, &mut server, Time::from_millis(4_000));
    assert_eq!(nodes[0].have().count_filled(), 256 + 256);
    nodes[0].set_playhead(1900);
    let end = run_alone(&mut nodes, &mut net, &mut server, Time::from_millis(6_000));
    assert_eq!(
        nodes[0].have().count_filled(),
        256 + 256 + 100,
        "at {end:?}"
    );
    assert_eq!(server.content_bytes, 612 * CS as u64);
}

#[test]
fn a_corrupt_chunk_is_reported_never_asked_again_and_comes_from_a_peer() {
    let data = content(300 * CS + 5);
    let tree = MerkleTree::from_content(HashAlgorithm::Sha256, CS, &data).unwrap();
    let mut served = data.clone();
    served[77 * CS + 10] ^= 1;
    let mut server = Server::new(&served, tree_file(&tree, 6));
    let mut nodes = vec![leecher(&tree, PickerKind::RarestFirst, 2)];
    nodes[0].enable_http_origin(origin_config(), Time::ZERO);
    let mut net = Net::new(Duration::from_millis(5), 0, 1);
    let end = run_alone(&mut nodes, &mut net, &mut server, Time::from_millis(10_000));
    let stats = nodes[0].stats();
    assert_eq!(
        stats.chunks_have,
        nodes[0].chunk_count() - 1,
        "all but one at {end:?}"
    );
    assert_eq!(stats.chunks_origin_corrupt, 1);
    let ev = events(&mut nodes[0]);
    let corrupt: Vec<u64> = ev
        .iter()
        .filter_map(|e| match e {
            Event::OriginCorrupt { chunk, .. } => Some(*chunk),
            _ => None,
        })
        .collect();
    assert_eq!(corrupt, vec![77]);
    assert!(
        !ev.iter()
            .any(|e| matches!(e, Event::ChunkFromOrigin { chunk: 77 }))
    );
    let asked_for_77 = server
        .requests
        .iter()
        .filter(|r| r.file == OriginFile::Content && r.range.contains(&(77 * CS as u64)))
        .count();
    assert_eq!(
        asked_for_77, 1,
        "the origin is not trusted again for that chunk"
    );
    // Nothing corrupt was kept.
    assert!(!nodes[0].have().is_filled(ppspp::Bin::chunk(77).unwrap()));
    // A seeder joins: the chunk comes from it.
    nodes.push(seeder(&tree, &data));
    nodes[0].connect(1, end);
    let end = run(
        &mut nodes,
        &mut net,
        &mut server,
        0,
        end + Duration::from_secs(10),
        |n| n[0].is_complete(),
    );
    assert!(nodes[0].is_complete(), "incomplete at {end:?}");
    assert_eq!(nodes[0].store().bytes(), &data[..]);
}

/// A video leecher (node 0, window `window`) with an origin configured by `config`,
/// connected to a seeder (node 1); `chunks` of content.
fn next_to_a_seeder(
    chunks: usize,
    window: u64,
    config: HttpOriginConfig,
) -> (Vec<u8>, Server, Vec<Node>, Net) {
    let data = content(chunks * CS);
    let tree = MerkleTree::from_content(HashAlgorithm::Sha256, CS, &data).unwrap();
    let server = Server::new(&data, tree_file(&tree, 6));
    let mut nodes = vec![
        leecher(&tree, PickerKind::Vod { window }, 2),
        seeder(&tree, &data),
    ];
    nodes[0].enable_http_origin(config, Time::ZERO);
    nodes[0].connect(1, Time::ZERO);
    (
        data,
        server,
        nodes,
        Net::new(Duration::from_millis(5), 0, 1),
    )
}

#[test]
fn next_to_a_seeder_the_origin_serves_the_head_and_nothing_a_peer_holds() {
    let config = HttpOriginConfig {
        head_bytes: 32 * CS as u64,
        ..HttpOriginConfig::default()
    };
    let (data, mut server, mut nodes, mut net) = next_to_a_seeder(3000, 256, config);
    let end = run(
        &mut nodes,
        &mut net,
        &mut server,
        0,
        Time::from_millis(60_000),
        |n| n[0].is_complete(),
    );
    assert!(nodes[0].is_complete(), "incomplete at {end:?}");
    assert_eq!(nodes[0].store().bytes(), &data[..]);
    assert_eq!(
        server.content_bytes,
        32 * CS as u64,
        "only the head from the origin"
    );
}

/// A page of 400 chunks (a window of 128) connected to a seeder whose HAVEs it knows,
/// from then on the seeder's datagrams that carry DATA (those over 512 bytes) are lost:
/// it stays connected and answers, and delivers nothing.
fn next_to_a_seeder_that_delivers_nothing(config: HttpOriginConfig) -> (Server, Vec<Node>, Net) {
    let (_, mut server, mut nodes, mut net) = next_to_a_seeder(400, 128, config);
    run(
        &mut nodes,
        &mut net,
        &mut server,
        0,
        Time::from_millis(30),
        |n| n[0].peers().count() == 1 && n[0].stats().chunks_have > 0,
    );
    net.rewrite.insert(
        1,
        Box::new(|d: &[u8]| {
            if d.len() > 512 {
                Vec::new()
            } else {
                d.to_vec()
            }
        }),
    );
    (server, nodes, net)
}

#[test]
fn a_due_chunk_a_peer_does_not_deliver_in_time_comes_from_the_origin() {
    let config = HttpOriginConfig {
        head_bytes: 0,
        peer_deadline: Duration::from_millis(300),
        ..HttpOriginConfig::default()
    };
    let (mut server, mut nodes, mut net) = next_to_a_seeder_that_delivers_nothing(config);
    let before = server.content_bytes;
    nodes[0].set_playhead(200);
    let end = run(
        &mut nodes,
        &mut net,
        &mut server,
        0,
        Time::from_millis(3_000),
        |n| (200..204).all(|c| n[0].have().is_filled(ppspp::Bin::chunk(c).unwrap())),
    );
    assert!(
        (200..204).all(|c| nodes[0].have().is_filled(ppspp::Bin::chunk(c).unwrap())),
        "due chunks still missing at {end:?}"
    );
    assert!(server.content_bytes > before, "the origin served them");
    // Not before the deadline.
    assert!(end >= Time::from_millis(300), "too early: {end:?}");
}

/// How long a page takes to hold `segment`, where playback waits for it (and may wait for
/// peers `slack`), next to a seeder that holds it but delivers nothing; run up to `limit`.
fn time_to_get_a_waited_for_segment(
    config: HttpOriginConfig,
    segment: std::ops::Range<u64>,
    slack: Option<Duration>,
    limit: Time,
) -> Duration {
    let (mut server, mut nodes, mut net) = next_to_a_seeder_that_delivers_nothing(config);
    let start = net.now;
    nodes[0].set_playhead(segment.start);
    nodes[0].set_waiting_for(Some(segment.clone()));
    nodes[0].set_waiting_slack(slack, start);
    let held = |n: &[Node]| {
        segment
            .clone()
            .all(|c| n[0].have().is_filled(ppspp::Bin::chunk(c).unwrap()))
    };
    let end = run(&mut nodes, &mut net, &mut server, 0, limit, held);
    assert!(held(&nodes), "the segment still missing at {end:?}");
    end.saturating_since(start)
}

/// Where playback waits (no first frame yet), a segment a connected seeder holds but does
/// not deliver comes from the origin after the shorter `waiting_deadline`, whole, long
/// before `peer_deadline`.
#[test]
fn what_playback_waits_for_comes_from_the_origin_after_the_waiting_deadline() {
    let config = HttpOriginConfig {
        head_bytes: 0,
        peer_deadline: Duration::from_millis(5_000),
        waiting_deadline: Duration::from_millis(300),
        ..HttpOriginConfig::default()
    };
    let took = time_to_get_a_waited_for_segment(config, 200..260, None, Time::from_millis(3_000));
    assert!(
        took >= Duration::from_millis(300),
        "not before the deadline: {took:?}"
    );
    assert!(
        took < Duration::from_millis(1_000),
        "long before peer_deadline: {took:?}"
    );
}

/// The same with slack: what playback waits for, if it may wait for peers, waits for a
/// connected seeder that holds it until `peer_deadline`, as a due chunk does.
#[test]
fn with_slack_what_playback_waits_for_waits_for_a_connected_peer_until_the_peer_deadline() {
    let config = HttpOriginConfig {
        head_bytes: 0,
        peer_deadline: Duration::from_millis(1_500),
        waiting_deadline: Duration::from_millis(300),
        ..HttpOriginConfig::default()
    };
    let slack = Some(Duration::from_secs(10));
    let took = time_to_get_a_waited_for_segment(config, 200..210, slack, Time::from_millis(5_000));
    assert!(
        took >= Duration::from_millis(1_500),
        "not before the peer deadline: {took:?}"
    );
}

#[test]
fn content_that_comes_before_its_hashes_waits_for_them() {
    let data = content(200 * CS + 1);
    let tree = MerkleTree::from_content(HashAlgorithm::Sha256, CS, &data).unwrap();
    let mut server = Server::new(&data, tree_file(&tree, 6));
    // The tree file is slow: content arrives first.
    let mut tree_waits = true;
    let mut nodes = vec![leecher(&tree, PickerKind::RarestFirst, 2)];
    nodes[0].enable_http_origin(origin_config(), Time::ZERO);
    let now = Time::ZERO;
    let mut reqs = Vec::new();
    while let Some(r) = nodes[0].poll_origin_request(now) {
        reqs.push(r);
    }
    assert_eq!(reqs[0].file, OriginFile::Tree, "the header first");
    assert!(reqs.len() > 1, "content does not wait for it: {reqs:?}");
    for r in reqs.iter().skip(1).chain(reqs.iter().take(1)) {
        let file = match r.file {
            OriginFile::Tree => &server.tree,
            OriginFile::Content => &server.content,
        };
        if r.file == OriginFile::Tree {
            tree_waits = false;
        }
        let end = (r.range.end as usize).min(file.len());
        nodes[0].handle_origin_response(now, r.id, &file[r.range.start as usize..end]);
        if tree_waits {
            assert_eq!(
                nodes[0].stats().chunks_have,
                0,
                "nothing verified before its hashes"
            );
        }
    }
    assert!(
        nodes[0].stats().chunks_have > 0,
        "verified once the hashes came"
    );
    let mut net = Net::new(Duration::from_millis(5), 0, 1);
    run(
        &mut nodes,
        &mut net,
        &mut server,
        0,
        Time::from_millis(10_000),
        |n| n[0].is_complete(),
    );
    assert_eq!(nodes[0].store().bytes(), &data[..]);
}

/// Chunks that came before their hashes (parked, then verified once the hashes came) and
/// were let go of under the memory bound are asked of the origin again after a seek back.
#[test]
fn chunks_parked_for_their_hashes_come_again_after_being_let_go_of() {
    let data = content(400 * CS);
    let tree = MerkleTree::from_content(HashAlgorithm::Sha256, CS, &data).unwrap();
    let mut server = Server::new(&data, tree_file(&tree, 6));
    let config = EngineConfig {
        seed: 2,
        picker: PickerKind::Vod { window: 16 },
        max_held_bytes: Some(32 * CS as u64),
        ..EngineConfig::default()
    };
    let mut nodes = vec![leecher_with(&tree, config)];
    nodes[0].enable_http_origin(origin_config(), Time::ZERO);
    // The tree file is slow: the first chunks come before their hashes.
    let now = Time::ZERO;
    let reqs: Vec<OriginRequest> =
        std::iter::from_fn(|| nodes[0].poll_origin_request(now)).collect();
    assert_eq!(reqs[0].file, OriginFile::Tree);
    for r in reqs.iter().skip(1).chain(reqs.iter().take(1)) {
        let file = match r.file {
            OriginFile::Tree => &server.tree,
            OriginFile::Content => &server.content,
        };
        let end = (r.range.end as usize).min(file.len());
        nodes[0].handle_origin_response(now, r.id, &file[r.range.start as usize..end]);
    }
    assert!(
        nodes[0].have().has_chunk(0),
        "verified once the hashes came"
    );
    let mut net = Net::new(Duration::from_millis(5), 0, 1);
    // Played on past the bound: the first chunks are let go of.
    for (i, at) in (200..300).step_by(16).enumerate() {
        nodes[0].set_playhead(at);
        let until = Time::from_millis(500 * (i as u64 + 1));
        run_alone(&mut nodes, &mut net, &mut server, until);
    }
    assert!(
        held(&nodes[0]).iter().all(|r| r.start >= 200),
        "{:?}",
        held(&nodes[0])
    );
    // A seek back: they come from the origin again.
    nodes[0].set_playhead(0);
    run_alone(&mut nodes, &mut net, &mut server, Time::from_millis(6_000));
    assert_eq!(
        held(&nodes[0]).first(),
        Some(&(0..24)),
        "the window from 0 again"
    );
}

/// A file leecher of `tree` with `server` as its only source (HTTP-only), run until it
/// completes or `limit`.
fn fetch_alone(tree: &MerkleTree, server: &mut Server, limit: Time) -> Node {
    let mut nodes = vec![leecher(tree, PickerKind::RarestFirst, 2)];
    nodes[0].enable_http_origin(origin_config(), Time::ZERO);
    let mut net = Net::new(Duration::from_millis(5), 0, 1);
    run(&mut nodes, &mut net, server, 0, limit, |n| {
        n[0].is_complete()
    });
    nodes.pop().unwrap()
}

#[test]
fn a_tree_file_with_another_group_size_works_too() {
    let data = content(500 * CS + 9);
    let tree = MerkleTree::from_content(HashAlgorithm::Sha256, CS, &data).unwrap();
    for layer in [0, 3, 8] {
        let mut server = Server::new(&data, tree_file(&tree, layer));
        let node = fetch_alone(&tree, &mut server, Time::from_millis(20_000));
        assert_eq!(node.store().bytes(), &data[..], "group layer {layer}");
    }
}

fn failing_run(answer: impl FnMut(&OriginRequest) -> Option<Answer> + 'static) -> (Node, Server) {
    let data = content(100 * CS);
    let tree = MerkleTree::from_content(HashAlgorithm::Sha256, CS, &data).unwrap();
    let mut server = Server::new(&data, tree_file(&tree, 6));
    server.misbehave = Box::new(answer);
    let node = fetch_alone(&tree, &mut server, Time::from_millis(120_000));
    (node, server)
}

fn failures(node: &mut Node) -> Vec<(OriginError, Option<Duration>, bool)> {
    events(node)
        .into_iter()
        .filter_map(|e| match e {
            Event::OriginFailed {
                error,
                retry_in,
                disabled,
            } => Some((error, retry_in, disabled)),
            _ => None,
        })
        .collect()
}

#[test]
fn permanent_failures_end_the_origin_at_once() {
    for error in [
        OriginError::NoRangeSupport,
        OriginError::Status(404),
        OriginError::Status(403),
    ] {
        let e = error.clone();
        let (mut node, server) = failing_run(move |_| Some(Err(e.clone())));
        let f = failures(&mut node);
        assert!(!f.is_empty(), "{error:?}");
        assert_eq!(f.last().unwrap(), &(error.clone(), None, true), "{error:?}");
        assert!(!node.has_http_origin());
        assert!(server.requests.len() <= HttpOriginConfig::default().max_requests);
        assert_eq!(node.stats().chunks_have, 0);
    }
}

#[test]
fn a_tree_file_for_other_content_ends_the_origin() {
    let other = content(100 * CS + 1);
    let other_tree = MerkleTree::from_content(HashAlgorithm::Sha256, CS, &other).unwrap();
    let other_file = tree_file(&other_tree, 6);
    let (mut node, _) = failing_run(move |r| {
        (r.file == OriginFile::Tree).then(|| {
            let end = (r.range.end as usize).min(other_file.len());
            Ok(other_file[r.range.start as usize..end].to_vec())
        })
    });
    let f = failures(&mut node);
    assert!(
        matches!(f.as_slice(), [(OriginError::BadTree(_), None, true)]),
        "{f:?}"
    );
    assert_eq!(node.stats().chunks_have, 0, "nothing kept without hashes");
    assert!(!node.has_http_origin());
}

#[test]
fn transient_failures_back_off_then_recover() {
    let mut left = 3;
    let (mut node, server) = failing_run(move |_| {
        (left > 0).then(|| {
            left -= 1;
            Err(OriginError::Status(503))
        })
    });
    assert!(node.is_complete(), "recovered: {:?}", node.stats());
    let f = failures(&mut node);
    // Failures that happen together count once: the waits double per round.
    let waits: Vec<Duration> = f.iter().filter_map(|(_, w, _)| *w).collect();
    assert!(
        f.iter()
            .all(|(e, _, d)| *e == OriginError::Status(503) && !d)
    );
    assert_eq!(waits.first(), Some(&Duration::from_millis(500)));
    assert!(waits.windows(2).all(|w| w[1] >= w[0]), "{waits:?}");
    assert!(server.requests.len() > 3);
}

#[test]
fn a_server_down_for_good_is_given_up_after_the_limit() {
    let (mut node, server) = failing_run(|_| Some(Err(OriginError::Timeout)));
    let f = failures(&mut node);
    let rounds = f.iter().filter(|(_, _, d)| !d).count();
    assert!(
        f.last()
            .is_some_and(|(e, w, d)| *e == OriginError::Timeout && w.is_none() && *d)
    );
    assert!(rounds >= 7, "{f:?}");
    assert!(!node.has_http_origin());
    assert!(server.requests.len() <= 8 * HttpOriginConfig::default().max_requests);
}

#[test]
fn a_short_body_is_a_failure_and_nothing_of_it_is_kept() {
    let mut first = true;
    let (mut node, _) = failing_run(move |r| {
        (r.file == OriginFile::Content && std::mem::take(&mut first)).then(|| Ok(vec![0; 10]))
    });
    let f = failures(&mut node);
    assert!(
        matches!(
            f.first(),
            Some((OriginError::WrongLength { got: 10, .. }, Some(_), false))
        ),
        "{f:?}"
    );
    assert!(node.is_complete(), "retried");
}

#[test]
fn a_file_fetch_waits_for_peers_before_taking_more_than_the_head_from_the_origin() {
    for coming in [false, true] {
        a_file_fetch_waits(coming);
    }
}

/// A whole-file fetch takes only the head while peers may come (`coming`: connections
/// are being set up, for at most three `alone_after`s), then the rest.
fn a_file_fetch_waits(coming: bool) {
    let data = content(600 * CS);
    let tree = MerkleTree::from_content(HashAlgorithm::Sha256, CS, &data).unwrap();
    let mut server = Server::new(&data, tree_file(&tree, 6));
    let mut nodes = vec![leecher(&tree, PickerKind::RarestFirst, 2)];
    let config = HttpOriginConfig {
        head_bytes: 16 * CS as u64,
        ..HttpOriginConfig::default()
    };
    let alone_after = config.alone_after;
    nodes[0].enable_http_origin(config, Time::ZERO);
    nodes[0].set_peers_coming(coming);
    let mut net = Net::new(Duration::from_millis(5), 0, 1);
    let waits = if coming { alone_after * 4 } else { alone_after };
    let waited = Time::ZERO + waits - Duration::from_millis(100);
    run_alone(&mut nodes, &mut net, &mut server, waited);
    assert_eq!(
        nodes[0].stats().chunks_have,
        16,
        "the head only, while peers may come (coming: {coming})"
    );
    // No peer came: the origin serves the rest.
    let end = run(
        &mut nodes,
        &mut net,
        &mut server,
        0,
        Time::from_millis(20_000),
        |n| n[0].is_complete(),
    );
    assert!(nodes[0].is_complete(), "incomplete at {end:?}");
    assert!(end >= Time::ZERO + waits);
}

/// A video page (a window of 256 chunks, 8 of them due) alone on the network with an
/// origin serving `chunks` chunks under `config`.
fn alone_video_page(chunks: usize, config: HttpOriginConfig) -> (Vec<Node>, Server, Net) {
    let data = content(chunks * CS);
    let tree = MerkleTree::from_content(HashAlgorithm::Sha256, CS, &data).unwrap();
    let server = Server::new(&data, tree_file(&tree, 6));
    let mut nodes = vec![leecher(&tree, PickerKind::Vod { window: 256 }, 2)];
    nodes[0].enable_http_origin(config, Time::ZERO);
    (nodes, server, Net::new(Duration::from_millis(5), 0, 1))
}

fn held(node: &Node) -> Vec<std::ops::Range<u64>> {
    node.have().filled_ranges().collect()
}

/// A video page alone with an origin whose head is 4 chunks; and the origin's settings.
fn video_with_origin() -> (Vec<Node>, Server, Net, HttpOriginConfig) {
    let config = HttpOriginConfig {
        head_bytes: 4 * CS as u64,
        ..HttpOriginConfig::default()
    };
    let (nodes, server, net) = alone_video_page(2000, config.clone());
    (nodes, server, net, config)
}

#[test]
fn while_peers_may_come_a_video_gets_the_head_and_what_is_due_then_alone_the_window() {
    let (mut nodes, mut server, mut net, config) = video_with_origin();
    let (deadline, alone_after) = (config.peer_deadline, config.alone_after);
    let have = |n: &Node| n.have().count_filled();
    run_alone(&mut nodes, &mut net, &mut server, Time::ZERO + deadline / 2);
    assert_eq!(have(&nodes[0]), 8, "the head and the due span at once");
    run_alone(
        &mut nodes,
        &mut net,
        &mut server,
        Time::ZERO + alone_after / 2,
    );
    assert_eq!(have(&nodes[0]), 8, "nothing more while peers may come");
    run_alone(
        &mut nodes,
        &mut net,
        &mut server,
        Time::ZERO + alone_after + deadline,
    );
    assert_eq!(have(&nodes[0]), 256, "alone: the whole window");
}

#[test]
fn while_connections_are_being_set_up_the_page_is_not_alone() {
    let (mut nodes, mut server, mut net, config) = video_with_origin();
    let alone_after = config.alone_after;
    nodes[0].set_peers_coming(true);
    let have = |n: &Node| n.have().count_filled();
    run_alone(
        &mut nodes,
        &mut net,
        &mut server,
        Time::ZERO + alone_after * 3,
    );
    assert_eq!(have(&nodes[0]), 8, "the head and the due span only");
    // The attempts failed: alone from now on, and after `alone_after` the whole window.
    nodes[0].set_peers_coming(false);
    let now = net.now;
    run_alone(&mut nodes, &mut net, &mut server, now + alone_after / 2);
    assert_eq!(have(&nodes[0]), 8);
    run_alone(&mut nodes, &mut net, &mut server, now + alone_after * 2);
    assert_eq!(have(&nodes[0]), 256, "alone: the whole window");
}

/// A page whose player asks for a segment (chunks 100..120) and may wait `slack` for it,
/// peers still connecting.
fn waiting_with_slack(slack: Duration) -> (Vec<Node>, Server, Net) {
    let (mut nodes, server, net, _) = video_with_origin();
    nodes[0].set_peers_coming(true);
    nodes[0].set_playhead(100);
    nodes[0].set_waiting_for(Some(100..120));
    nodes[0].set_waiting_slack(Some(slack), Time::ZERO);
    (nodes, server, net)
}

#[test]
fn playback_with_media_ahead_waits_for_connecting_peers_until_its_slack_is_spent() {
    let (mut nodes, mut server, mut net) = waiting_with_slack(Duration::from_secs(3));
    run_alone(&mut nodes, &mut net, &mut server, Time::from_millis(2_900));
    assert_eq!(
        held(&nodes[0]),
        vec![0..4],
        "the head only while peers may come"
    );
    run_alone(&mut nodes, &mut net, &mut server, Time::from_millis(3_500));
    assert_eq!(held(&nodes[0]), vec![0..4, 100..120], "the slack spent");
    // With no slack, the segment comes at once.
    let (mut nodes, mut server, mut net) = waiting_with_slack(Duration::ZERO);
    run_alone(&mut nodes, &mut net, &mut server, Time::from_millis(500));
    assert_eq!(held(&nodes[0]), vec![0..4, 100..120]);
}

#[test]
fn where_playback_waits_the_origin_serves_as_many_chunks_as_are_due() {
    let config = HttpOriginConfig {
        head_bytes: 0,
        ..HttpOriginConfig::default()
    };
    let (mut nodes, mut server, mut net) = alone_video_page(1000, config);
    run_alone(&mut nodes, &mut net, &mut server, Time::from_millis(500));
    assert_eq!(held(&nodes[0]), vec![0..8]);
    // Playback waits at chunk 100 (a first keyframe larger than the due span, say).
    nodes[0].set_waiting_for(Some(100..100));
    run_alone(&mut nodes, &mut net, &mut server, Time::from_millis(1000));
    assert_eq!(held(&nodes[0]), vec![0..8, 100..108]);
    // It waits no more: nothing beyond the due span.
    nodes[0].set_waiting_for(None);
    run_alone(&mut nodes, &mut net, &mut server, Time::from_millis(1500));
    assert_eq!(held(&nodes[0]), vec![0..8, 100..108]);
}

/// Pages that start together with an HTTP origin and no seeder hold the same head and
/// connect to each other; nobody holds the rest of a first segment bigger than the due
/// span. Told once where that segment ends, each page gets it whole from the origin,
/// though playback never says again where it waits (no frame, so no time update).
#[test]
fn connected_pages_get_a_segment_bigger_than_the_due_span_from_the_origin() {
    let data = content(1000 * CS);
    let tree = MerkleTree::from_content(HashAlgorithm::Sha256, CS, &data).unwrap();
    // A window of 256 chunks: 8 due from the playhead.
    let mut nodes: Vec<Node> = (0..3)
        .map(|i| leecher(&tree, PickerKind::Vod { window: 256 }, 10 + i))
        .collect();
    let mut servers: Vec<Server> = (0..3)
        .map(|_| Server::new(&data, tree_file(&tree, 6)))
        .collect();
    let config = HttpOriginConfig {
        head_bytes: 4 * CS as u64,
        ..HttpOriginConfig::default()
    };
    for node in &mut nodes {
        node.enable_http_origin(config.clone(), Time::ZERO);
    }
    nodes[0].connect(1, Time::ZERO);
    nodes[0].connect(2, Time::ZERO);
    nodes[1].connect(2, Time::ZERO);
    let mut net = Net::new(Duration::from_millis(5), 0, 1);
    run_each(&mut nodes, &mut servers, &mut net, Time::from_millis(300));
    for node in &nodes {
        assert_eq!(node.have().count_filled(), 8, "the head and the due span");
    }
    // The first segment ends at chunk 150: playback waits for 8..150.
    for node in &mut nodes {
        node.set_waiting_for(Some(8..150));
    }
    run_each(&mut nodes, &mut servers, &mut net, Time::from_millis(800));
    for (i, node) in nodes.iter().enumerate() {
        let held: Vec<_> = node.have().filled_ranges().collect();
        assert_eq!(held.first(), Some(&(0..150)), "page {i} holds {held:?}");
    }
}

/// An HTTP-only page bounded in read-ahead asks the origin for nothing beyond it, however
/// long it is alone; the bound moves with the playhead.
#[test]
fn http_only_fetches_no_further_than_the_read_ahead() {
    let (mut nodes, mut server, mut net) = alone_video_page(1000, origin_config());
    nodes[0].set_read_ahead(Some(100));
    run_alone(&mut nodes, &mut net, &mut server, Time::from_millis(5_000));
    assert_eq!(held(&nodes[0]), vec![0..100]);
    assert_eq!(server.content_bytes, 100 * CS as u64);
    nodes[0].set_playhead(60);
    run_alone(&mut nodes, &mut net, &mut server, Time::from_millis(10_000));
    assert_eq!(held(&nodes[0]), vec![0..160]);
    assert_eq!(server.content_bytes, 160 * CS as u64, "each chunk once");
}

/// The origin's own read-ahead is shorter than the page's: alone, the page asks the
/// origin for that much only; where playback waits it is served all the same.
#[test]
fn the_origin_read_ahead_bounds_what_an_http_only_page_asks_of_it() {
    let config = HttpOriginConfig {
        head_bytes: 0,
        ..origin_config()
    };
    let (mut nodes, mut server, mut net) = alone_video_page(1000, config);
    nodes[0].set_origin_read_ahead(Some(40));
    run_alone(&mut nodes, &mut net, &mut server, Time::from_millis(3_000));
    assert_eq!(held(&nodes[0]), vec![0..40]);
    nodes[0].set_playhead(20);
    run_alone(&mut nodes, &mut net, &mut server, Time::from_millis(6_000));
    assert_eq!(held(&nodes[0]), vec![0..60]);
    // Playback waits at 100 for a segment to 130: beyond the read-ahead, served whole.
    nodes[0].set_waiting_for(Some(100..130));
    run_alone(&mut nodes, &mut net, &mut server, Time::from_millis(9_000));
    assert_eq!(held(&nodes[0]), vec![0..60, 100..130]);
}

/// A silent origin (its answers take 10 s, an adapter's request timeout) holds up nothing a
/// connected seeder holds: after `origin_deadline` the chunks asked of it are asked of the
/// seeder too. Before, the head and the first runs waited the 10 s, for the whole-file
/// picker of `ppspp fetch` and a page's video picker alike.
#[test]
fn a_silent_origin_delays_nothing_a_peer_holds() {
    for picker in [PickerKind::RarestFirst, PickerKind::Vod { window: 256 }] {
        let data = content(1500 * CS);
        let tree = MerkleTree::from_content(HashAlgorithm::Sha256, CS, &data).unwrap();
        let mut server = Server::new(&data, tree_file(&tree, 6));
        server.latency = Duration::from_secs(10);
        let mut nodes = vec![leecher(&tree, picker.clone(), 2), seeder(&tree, &data)];
        nodes[0].enable_http_origin(HttpOriginConfig::default(), Time::ZERO);
        nodes[0].connect(1, Time::ZERO);
        let mut net = Net::new(Duration::from_millis(5), 0, 1);
        let end = run(
            &mut nodes,
            &mut net,
            &mut server,
            0,
            Time::from_millis(5_000),
            |n| n[0].is_complete(),
        );
        assert!(
            nodes[0].is_complete(),
            "{picker:?}: {} of 1500 chunks by {end:?}, {} origin requests unanswered",
            nodes[0].have().count_filled(),
            server.pending.len()
        );
        assert!(
            server
                .requests
                .iter()
                .any(|r| r.file == OriginFile::Content),
            "{picker:?}"
        );
        assert_eq!(nodes[0].store().bytes(), &data[..]);
    }
}

/// Two connected pages that play in step lack the same due chunks at the same moment. Each
/// waits its turn before asking the origin for one nobody holds, so mostly one of them
/// fetches it and the other gets it from that page: the origin sends far fewer than two
/// copies, and playback still finds what it needs.
#[test]
fn pages_that_play_in_step_share_the_origin() {
    const CHUNKS: u64 = 1000;
    let data = content(CHUNKS as usize * CS);
    let tree = MerkleTree::from_content(HashAlgorithm::Sha256, CS, &data).unwrap();
    // A window of 256 chunks: 8 due from the playhead.
    let mut nodes: Vec<Node> = (0..2)
        .map(|i| leecher(&tree, PickerKind::Vod { window: 256 }, 30 + i))
        .collect();
    let mut servers: Vec<Server> = (0..2)
        .map(|_| Server::new(&data, tree_file(&tree, 6)))
        .collect();
    let config = HttpOriginConfig {
        head_bytes: 8 * CS as u64,
        ..HttpOriginConfig::default()
    };
    for node in &mut nodes {
        node.enable_http_origin(config.clone(), Time::ZERO);
    }
    nodes[0].connect(1, Time::ZERO);
    let mut net = Net::new(Duration::from_millis(5), 0, 1);
    // Playback: the due span's 8 chunks take 360 ms to play (128 KiB of a 2.9 Mbit/s
    // video); each tick a page moves on as far as it holds, at most that much.
    let tick = Duration::from_millis(360);
    let mut playheads = [0u64; 2];
    let mut short_ticks = [0u32; 2];
    let mut next_tick = Time::ZERO + tick;
    let limit = Time::from_millis(120_000);
    while net.now < limit && playheads.iter().any(|&p| p < CHUNKS) {
        let until = net.now + Duration::from_millis(2);
        run_each(&mut nodes, &mut servers, &mut net, until);
        if net.now >= next_tick {
            next_tick += tick;
            for (i, node) in nodes.iter_mut().enumerate() {
                let p = playheads[i];
                if p >= CHUNKS {
                    continue;
                }
                let held_to = node
                    .have()
                    .filled_ranges()
                    .find(|r| r.contains(&p))
                    .map_or(p, |r| r.end);
                let to = held_to.min(p + 8).min(CHUNKS);
                if to < (p + 8).min(CHUNKS) {
                    short_ticks[i] += 1;
                }
                playheads[i] = to;
                node.set_playhead(to.min(CHUNKS - 1));
            }
        }
    }
    assert_eq!(playheads, [CHUNKS; 2], "both pages played to the end");
    let sent: u64 = servers.iter().map(|s| s.content_bytes).sum();
    let copies = sent as f64 / data.len() as f64;
    assert!(
        copies <= 1.35,
        "the origin sent {copies:.2} copies (per page {:?}); ticks short of data {short_ticks:?}",
        servers.iter().map(|s| s.content_bytes).collect::<Vec<_>>()
    );
    for (i, &short) in short_ticks.iter().enumerate() {
        assert!(
            short <= 3,
            "page {i} was short of data at {short} ticks of 125"
        );
    }
}
