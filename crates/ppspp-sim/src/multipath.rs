//! Path-level peers over an inter-domain topology (the BitTorrent-over-SCION paper,
//! ../shared/papers/bittorrent-over-scion-multipath.txt). Autonomous systems are joined by
//! links of their own capacity; hosts sit in ASes behind access links. Between two hosts
//! there are several valley-free AS paths. Three ways to use them:
//! - **single path** (BGP-like): every pair of hosts uses its shortest AS path;
//! - **ECMP**: every pair uses one of its equal-length shortest paths, picked by a hash of
//!   the pair (per-flow load splitting);
//! - **multipath**: path-level peers, a channel per path, the paths ranked by the paper's
//!   upload-based disjoint selection (Algorithm 1: all paths to the peers, sorted by how
//!   many interface IDs each shares with the others, then by length).
//!
//! Hosts in one AS reach each other without crossing the core; they are connected under
//! every routing. Across the core, each host opens channels to peers taken in a seeded
//! random order (the same peers under every routing), at most `max_outgoing` of them (the
//! paper's OutgoingConns). With no limit, multipath opens every path to every peer (the
//! paper's bandwidth aggregation); with one, it opens as many channels as the others:
//! Algorithm 1's first `max_outgoing` among every path to those same peers (several paths
//! to one peer, or none). Taking them from the paths to all peers instead, as the paper
//! words it, leaves whole groups of ASes talking only among themselves at small limits: every
//! host prefers the same few uncontended paths. Every host also answers the channels
//! others open to it.
//!
//! Every host runs a real engine; the seeder is host 0, the others fetch the content from
//! it and from each other.

use crate::link::LinkConfig;
use crate::net::{CorePath, Network, NodeId};
use crate::sampling::{Sampling, meet, shuffle, unreachable_from};
use crate::scenario::{Content, config};
use ppspp::engine::{EngineConfig, Event};
use ppspp::rng::Rng;
use ppspp::time::Time;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// How hosts use the paths between them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Routing {
    SinglePath,
    Ecmp,
    /// Path-level peers, chosen by [`disjoint_selection`].
    Multipath,
}

/// An AS-level topology: Tier-1 ASes in a full mesh of peering links, Tier-2 ASes each
/// buying transit from two Tier-1s, and peering links between some Tier-2s.
#[derive(Clone, Debug)]
pub struct Topology {
    pub ases: usize,
    /// (provider, customer) transit links.
    pub transit: Vec<(usize, usize)>,
    /// Peering links (each usable only between its two ends: valley-free).
    pub peering: Vec<(usize, usize)>,
    /// Link capacity in bit/s by AS pair (either order).
    pub capacity: BTreeMap<(usize, usize), u64>,
}

/// Tier-1 ASes are 0, 1 and 2; Tier-2 ASes 3 to 12.
pub const TIER1: usize = 3;
pub const TIER2: usize = 10;
const TIER1_BPS: u64 = 15_000_000;
const OTHER_BPS: u64 = 10_000_000;
/// Propagation delay of an inter-AS link, and within an AS.
const LINK_DELAY: Duration = Duration::from_millis(5);
const LOCAL_DELAY: Duration = Duration::from_millis(1);

impl Topology {
    /// The paper's kind of small Internet (its Fig. 3 in spirit: Tier-1 links of
    /// 15 Mbit/s, every other link 10 Mbit/s).
    pub fn internet() -> Topology {
        let mut t = Topology {
            ases: TIER1 + TIER2,
            transit: Vec::new(),
            peering: Vec::new(),
            capacity: BTreeMap::new(),
        };
        for a in 0..TIER1 {
            for b in a + 1..TIER1 {
                t.peering.push((a, b));
                t.capacity.insert((a, b), TIER1_BPS);
            }
        }
        for i in 0..TIER2 {
            let c = TIER1 + i;
            for p in [i % TIER1, (i + 1) % TIER1] {
                t.transit.push((p, c));
                t.capacity.insert((p.min(c), p.max(c)), OTHER_BPS);
            }
        }
        // Tier-2 peering: neighbours in a ring, every other pair.
        for i in (0..TIER2).step_by(2) {
            let (a, b) = (TIER1 + i, TIER1 + (i + 1) % TIER2);
            t.peering.push((a, b));
            t.capacity.insert((a.min(b), a.max(b)), OTHER_BPS);
        }
        for i in (1..TIER2).step_by(4) {
            let (a, b) = (TIER1 + i, TIER1 + (i + 3) % TIER2);
            if !t.capacity.contains_key(&(a.min(b), a.max(b))) {
                t.peering.push((a, b));
                t.capacity.insert((a.min(b), a.max(b)), OTHER_BPS);
            }
        }
        t
    }

    fn providers(&self, c: usize) -> Vec<usize> {
        self.transit
            .iter()
            .filter(|l| l.1 == c)
            .map(|l| l.0)
            .collect()
    }

    fn peers(&self, a: usize, b: usize) -> bool {
        self.peering.contains(&(a, b)) || self.peering.contains(&(b, a))
    }

    /// The valley-free AS paths from `a` to `b` (both Tier-2, or equal), shortest first,
    /// then by AS numbers: a direct peering link; up to a common provider and down; up,
    /// across the Tier-1 mesh, and down.
    pub fn paths(&self, a: usize, b: usize) -> Vec<Vec<usize>> {
        if a == b {
            return vec![vec![a]];
        }
        let mut out = Vec::new();
        if self.peers(a, b) {
            out.push(vec![a, b]);
        }
        let (pa, pb) = (self.providers(a), self.providers(b));
        for &t in &pa {
            if pb.contains(&t) {
                out.push(vec![a, t, b]);
            }
        }
        for &x in &pa {
            for &y in &pb {
                if x != y && self.peers(x, y) {
                    out.push(vec![a, x, y, b]);
                }
            }
        }
        out.sort_by(|p, q| p.len().cmp(&q.len()).then(p.cmp(q)));
        out
    }
}

/// The interface IDs a path uses: (AS, neighbour) for each end of each link it crosses.
fn interfaces(path: &[usize]) -> Vec<(usize, usize)> {
    path.windows(2)
        .flat_map(|w| [(w[0], w[1]), (w[1], w[0])])
        .collect()
}

/// The paper's Algorithm 1: of all `paths` (peer, path number, AS path), the
/// `max_outgoing` that share the fewest interface IDs with the others, shorter first.
pub fn disjoint_selection(
    paths: &[(usize, usize, Vec<usize>)],
    max_outgoing: Option<usize>,
) -> Vec<(usize, usize)> {
    let ifaces: Vec<BTreeSet<(usize, usize)>> = paths
        .iter()
        .map(|p| interfaces(&p.2).into_iter().collect())
        .collect();
    let mut scored: Vec<(usize, usize, usize, usize)> = paths
        .iter()
        .enumerate()
        .map(|(i, (peer, k, path))| {
            let conflicts = ifaces
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, other)| ifaces[i].intersection(other).count())
                .sum();
            (conflicts, path.len(), *peer, *k)
        })
        .collect();
    scored.sort();
    scored
        .into_iter()
        .take(max_outgoing.unwrap_or(usize::MAX))
        .map(|(_, _, peer, k)| (peer, k))
        .collect()
}

/// How hosts come to have channels to each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Meeting {
    /// Hosts in one AS always; across the core, each host to peers in a seeded random
    /// order, at most `max_outgoing` (the multipath paper's setting).
    Mesh,
    /// Through the signaling server: hosts join in a seeded random order (the seeder
    /// first), and each opens channels to the sample its welcome gives it, of at most
    /// `size` of those before it (single path routing).
    Samples { size: usize, sampling: Sampling },
}

#[derive(Clone, Debug)]
pub struct MultipathParams {
    /// The ASes hosts sit in, one after another (host i in `host_ases[i % len]`).
    pub host_ases: Vec<usize>,
    /// Hosts in all, host 0 the seeder.
    pub hosts: usize,
    pub content_len: usize,
    pub chunk_size: usize,
    pub routing: Routing,
    /// Channels each host opens across the core (`None`: to every peer, and for
    /// multipath over every path).
    pub max_outgoing: Option<usize>,
    /// Peers each host uploads to at once (BitTorrent's upload slots).
    pub max_unchoked: usize,
    /// Each host's uplink and downlink.
    pub access_bps: u64,
    /// Every link's queue.
    pub queue_bytes: usize,
    pub seed: u64,
    /// Simulated seconds after which the run stops, complete or not.
    pub limit_s: f64,
    pub meeting: Meeting,
}

#[derive(Clone, Debug)]
pub struct MultipathResult {
    /// Per fetching host, when it completed (seconds).
    pub completion_s: Vec<Option<f64>>,
    /// Channels the hosts opened in all (a path-level peer is one).
    pub channels: usize,
    /// Chunks written to any store whose bytes differ from the original.
    pub corrupt_chunks: u64,
    /// Bytes each direction of each inter-AS link carried, by (from AS, to AS).
    pub core_link_bytes: BTreeMap<(usize, usize), u64>,
    /// Bytes carried by inter-AS links (once per link crossed) per content byte delivered
    /// to a fetching host: how much of the core each delivered byte used.
    pub core_bytes_per_content_byte: f64,
    /// Payload bytes that arrived at a host holding them already, per content byte
    /// delivered.
    pub duplicate_share: f64,
    /// Per fetching host, when its first chunk was verified (seconds).
    pub first_chunk_s: Vec<Option<f64>>,
    /// Channels between hosts of different ASes, as the hosts opened them.
    pub cross_as_channels: usize,
    /// Fetching hosts that the opened channels do not link to the seeder (islands; they
    /// can still be reached through peer exchange).
    pub cut_off: usize,
}

impl MultipathResult {
    pub fn mean_completion(&self) -> f64 {
        let xs: Vec<f64> = self.completion_s.iter().filter_map(|c| *c).collect();
        xs.iter().sum::<f64>() / xs.len().max(1) as f64
    }

    /// The fetching hosts' goodput added up, Mbit/s: each host's content ÷ its time.
    pub fn aggregate_goodput_mbps(&self, content_len: usize) -> f64 {
        self.completion_s
            .iter()
            .filter_map(|c| *c)
            .map(|t| content_len as f64 * 8.0 / t / 1e6)
            .sum()
    }
}

/// Runs one swarm over [`Topology::internet`].
pub fn run(p: &MultipathParams) -> MultipathResult {
    let topo = Topology::internet();
    let content = Content::new(p.content_len, p.chunk_size, p.seed);
    let mut net = Network::new(p.seed);
    // Each direction of each AS link.
    let mut as_link = BTreeMap::new();
    for (&(a, b), &bps) in &topo.capacity {
        as_link.insert((a, b), net.add_link(LinkConfig::new(bps, p.queue_bytes)));
        as_link.insert((b, a), net.add_link(LinkConfig::new(bps, p.queue_bytes)));
    }
    let engine_config = |seed: u64| EngineConfig {
        max_peers: 1024,
        max_unchoked: p.max_unchoked,
        ..config(seed)
    };
    let access = LinkConfig::new(p.access_bps, p.queue_bytes);
    let mut hosts: Vec<NodeId> = Vec::new();
    let host_as: Vec<usize> = (0..p.hosts)
        .map(|i| p.host_ases[i % p.host_ases.len()])
        .collect();
    for i in 0..p.hosts {
        let seed = p.seed * 1000 + i as u64;
        let engine = if i == 0 {
            content.seeder(engine_config(seed))
        } else {
            content.leecher(engine_config(seed))
        };
        hosts.push(net.add_node(
            Network::peer(engine, None),
            access.clone(),
            access.clone(),
            Duration::ZERO,
        ));
    }
    // The AS paths of every pair, both ways, numbered alike.
    let mut pair_paths: BTreeMap<(usize, usize), Vec<Vec<usize>>> = BTreeMap::new();
    for i in 0..p.hosts {
        for j in 0..p.hosts {
            if i == j {
                continue;
            }
            let (a, b) = (host_as[i], host_as[j]);
            let paths = if i < j {
                topo.paths(a, b)
            } else {
                topo.paths(b, a)
                    .into_iter()
                    .map(|mut q| {
                        q.reverse();
                        q
                    })
                    .collect()
            };
            let core: Vec<CorePath> = paths
                .iter()
                .map(|q| CorePath {
                    links: q.windows(2).map(|w| as_link[&(w[0], w[1])]).collect(),
                    delay: LOCAL_DELAY + LINK_DELAY * (q.len() as u32 - 1),
                })
                .collect();
            net.core_paths.insert((hosts[i], hosts[j]), core);
            pair_paths.insert((i, j), paths);
        }
    }
    let mut rng = Rng::new(p.seed ^ 0x6d70);
    // Which paths each pair uses: (lower host, higher host, path number).
    let channels = match p.meeting {
        Meeting::Mesh => mesh_channels(p, &host_as, &pair_paths, &mut rng),
        Meeting::Samples { size, sampling } => {
            let mut order: Vec<usize> = (1..p.hosts).collect();
            shuffle(&mut order, &mut rng);
            order.insert(0, 0);
            meet(&host_as, &order, size, sampling, &mut rng)
                .into_iter()
                .map(|(i, j)| (i.min(j), i.max(j), 0))
                .collect()
        }
    };
    let pairs: Vec<(usize, usize)> = channels.iter().map(|&(i, j, _)| (i, j)).collect();
    let cross_as_channels = pairs
        .iter()
        .filter(|(i, j)| host_as[*i] != host_as[*j])
        .count();
    let cut_off = unreachable_from(p.hosts, &pairs, 0).len();
    for &(i, j, k) in &channels {
        let to = net.alias(hosts[j], k);
        net.alias(hosts[i], k);
        net.with_engine(hosts[i], |e, now| {
            e.connect(to, now);
        });
    }
    let leechers: Vec<NodeId> = hosts[1..].to_vec();
    let limit = Time::from_micros((p.limit_s * 1e6) as u64);
    net.run_while(Duration::from_millis(250), limit, |n| {
        leechers.iter().all(|&id| n.engine(id).is_complete())
    });
    let completion_s = leechers
        .iter()
        .map(|&id| {
            net.peer_ref(id)
                .completed_at
                .map(|t| t.as_micros() as f64 / 1e6)
        })
        .collect();
    let first_chunk_s = leechers
        .iter()
        .map(|&id| {
            net.peer_ref(id)
                .events
                .iter()
                .find(|(_, e)| matches!(e, Event::ChunkVerified { .. }))
                .map(|(t, _)| t.as_micros() as f64 / 1e6)
        })
        .collect();
    let core_link_bytes: BTreeMap<(usize, usize), u64> = as_link
        .iter()
        .map(|(&ends, &l)| (ends, net.links[l].stats.bytes))
        .collect();
    let core_bytes: u64 = core_link_bytes.values().sum();
    let delivered = (p.content_len * (p.hosts - 1)) as f64;
    let duplicate: u64 = hosts
        .iter()
        .map(|&h| net.engine(h).stats().bytes_duplicate)
        .sum();
    let corrupt_chunks = leechers
        .iter()
        .map(|&id| net.engine(id).store().corrupt_writes)
        .sum();
    MultipathResult {
        completion_s,
        channels: channels.len(),
        corrupt_chunks,
        core_link_bytes,
        core_bytes_per_content_byte: core_bytes as f64 / delivered,
        duplicate_share: duplicate as f64 / delivered,
        first_chunk_s,
        cross_as_channels,
        cut_off,
    }
}

/// The channels of [`Meeting::Mesh`]: hosts in one AS always, and across the core each
/// host to peers in a seeded random order, over the paths its routing picks.
fn mesh_channels(
    p: &MultipathParams,
    host_as: &[usize],
    pair_paths: &BTreeMap<(usize, usize), Vec<Vec<usize>>>,
    rng: &mut Rng,
) -> BTreeSet<(usize, usize, usize)> {
    let mut channels = BTreeSet::new();
    // Hosts in one AS reach each other without crossing the core, whatever the routing:
    // they are always connected, and the outgoing limit counts channels across the core.
    for i in 0..p.hosts {
        for j in i + 1..p.hosts {
            if host_as[i] == host_as[j] {
                channels.insert((i, j, 0));
            }
        }
    }
    for i in 0..p.hosts {
        // The peers this host opens channels to: the same under every routing.
        let mut peers: Vec<usize> = (0..p.hosts).filter(|&j| host_as[j] != host_as[i]).collect();
        shuffle(&mut peers, rng);
        peers.truncate(p.max_outgoing.unwrap_or(usize::MAX));
        let paths_to = |peers: &[usize]| -> Vec<(usize, usize, Vec<usize>)> {
            peers
                .iter()
                .flat_map(|&j| {
                    pair_paths[&(i, j)]
                        .iter()
                        .enumerate()
                        .map(move |(k, q)| (j, k, q.clone()))
                })
                .collect()
        };
        match (p.routing, p.max_outgoing) {
            (Routing::SinglePath | Routing::Ecmp, _) => {
                for j in peers {
                    let (a, b) = (i.min(j), i.max(j));
                    let paths = &pair_paths[&(a, b)];
                    let shortest = paths[0].len();
                    let equal = paths.iter().take_while(|q| q.len() == shortest).count();
                    let k = match p.routing {
                        Routing::Ecmp => (pair_hash(a, b, p.seed) % equal as u64) as usize,
                        _ => 0,
                    };
                    channels.insert((a, b, k));
                }
            }
            // No limit: every path to every peer (the paper's bandwidth aggregation).
            (Routing::Multipath, None) => {
                for (j, k) in disjoint_selection(&paths_to(&peers), None) {
                    channels.insert((i.min(j), i.max(j), k));
                }
            }
            // As many channels as the others: Algorithm 1's first `k` among every path to
            // the same peers (several paths to one peer, or none).
            (Routing::Multipath, Some(k)) => {
                for (j, path) in disjoint_selection(&paths_to(&peers), Some(k)) {
                    channels.insert((i.min(j), i.max(j), path));
                }
            }
        }
    }
    channels
}

/// A fixed hash of a host pair (ECMP's per-flow choice).
fn pair_hash(i: usize, j: usize, seed: u64) -> u64 {
    Rng::new(seed ^ ((i as u64) << 32) ^ j as u64).next_u64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_valley_free_and_shortest_first() {
        let t = Topology::internet();
        // AS 3 (Tier-2 #0) buys from 0 and 1 and peers with 4; AS 4 buys from 1 and 2.
        let ps = t.paths(3, 4);
        assert_eq!(ps[0], vec![3, 4]);
        assert_eq!(ps[1], vec![3, 1, 4]);
        assert!(ps.contains(&vec![3, 0, 2, 4]));
        for p in &ps {
            // Never down and up again: a Tier-2 AS is only ever at the ends.
            assert!(p[1..p.len() - 1].iter().all(|&a| a < TIER1), "{p:?}");
        }
        assert!(ps.windows(2).all(|w| w[0].len() <= w[1].len()));
    }

    #[test]
    fn disjoint_selection_prefers_paths_sharing_nothing() {
        // To one peer: a direct path, and two that share the link 3-0.
        let paths = vec![
            (1, 0, vec![3, 0, 4]),
            (1, 1, vec![3, 4]),
            (1, 2, vec![3, 0, 1, 4]),
        ];
        assert_eq!(disjoint_selection(&paths, Some(1)), vec![(1, 1)]);
        assert_eq!(disjoint_selection(&paths, Some(2)), vec![(1, 1), (1, 0)]);
        assert_eq!(disjoint_selection(&paths, None).len(), 3);
    }
}
