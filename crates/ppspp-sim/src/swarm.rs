//! One seeder and N leechers that find each other through a tracker-like bootstrap list
//! (each leecher connects to the seeder and to a random sample of other leechers).

use crate::link::LinkConfig;
use crate::net::Network;
use crate::scenario::{Content, config};
use ppspp::engine::EngineConfig;
use ppspp::rng::Rng;
use ppspp::time::Time;
use std::time::Duration;

/// How far apart the nodes are.
#[derive(Clone, Debug, PartialEq)]
pub enum Latency {
    /// Every pair has this round-trip time.
    Homogeneous(Duration),
    /// The BitTorrent-testbed paper's five ASes (Table I): leecher i sits in AS (i mod 5)+1,
    /// the seeder in AS1'. Same-AS pairs talk over "loopback", others over "ethernet".
    AsTable,
}

/// Latency added per direction on loopback and ethernet, ms (testbed paper, Table I).
pub const AS_TABLE: [(u64, u64); 5] = [(2, 5), (5, 15), (10, 25), (25, 100), (50, 100)];

#[derive(Clone, Debug)]
pub struct SwarmParams {
    pub leechers: usize,
    pub content_len: usize,
    pub seed: u64,
    pub latency: Latency,
    pub seeder_up_bps: u64,
    pub leecher_up_bps: u64,
    pub down_bps: u64,
    pub queue_bytes: usize,
    /// Other leechers each leecher is told about.
    pub bootstrap: usize,
    /// Peers the seeder serves at once (the rest are choked).
    pub seeder_unchoked: usize,
    pub limit_s: f64,
}

impl SwarmParams {
    pub fn new(leechers: usize, seed: u64, latency: Latency) -> SwarmParams {
        SwarmParams {
            leechers,
            content_len: 512 * 1024,
            seed,
            latency,
            seeder_up_bps: 1_000_000,
            leecher_up_bps: 4_000_000,
            down_bps: 20_000_000,
            queue_bytes: 100_000,
            bootstrap: 8,
            seeder_unchoked: 2,
            limit_s: 900.0,
        }
    }
}

#[derive(Clone, Debug)]
pub struct SwarmResult {
    pub leechers: usize,
    pub complete: usize,
    /// Per leecher: completion time in seconds, and its AS (1–5) under [`Latency::AsTable`].
    pub completion_s: Vec<(Option<f64>, usize)>,
    /// Chunks written to any store whose bytes differ from the original.
    pub corrupt_chunks: u64,
    pub seeder_upload_ratio: f64,
    pub content_len: usize,
}

impl SwarmResult {
    pub fn mean_completion(&self) -> f64 {
        let xs: Vec<f64> = self.completion_s.iter().filter_map(|c| c.0).collect();
        xs.iter().sum::<f64>() / xs.len().max(1) as f64
    }

    pub fn max_completion(&self) -> f64 {
        self.completion_s
            .iter()
            .filter_map(|c| c.0)
            .fold(0.0, f64::max)
    }
}

fn as_of(leecher: usize) -> usize {
    leecher % 5
}

/// One-way delay between nodes (0 = seeder, 1.. = leechers) under the AS table.
fn as_owd(a: usize, b: usize) -> Duration {
    let ms = match (a, b) {
        (0, 0) => 0,
        (0, x) | (x, 0) => AS_TABLE[0].1 + AS_TABLE[as_of(x - 1)].1,
        (x, y) => {
            let (ax, ay) = (as_of(x - 1), as_of(y - 1));
            if ax == ay {
                2 * AS_TABLE[ax].0
            } else {
                AS_TABLE[ax].1 + AS_TABLE[ay].1
            }
        }
    };
    Duration::from_millis(ms)
}

pub fn run(p: &SwarmParams) -> SwarmResult {
    let content = Content::new(p.content_len, 1024, p.seed);
    let mut net = Network::new(p.seed);
    let mut rng = Rng::new(p.seed ^ 0x5eed);
    let half = match p.latency {
        Latency::Homogeneous(rtt) => rtt / 4,
        Latency::AsTable => Duration::ZERO,
    };
    let down = LinkConfig::new(p.down_bps, p.queue_bytes);
    let seeder = net.add_node(
        Network::peer(
            content.seeder(EngineConfig {
                max_unchoked: p.seeder_unchoked,
                ..config(p.seed * 1000)
            }),
            None,
        ),
        LinkConfig::new(p.seeder_up_bps, p.queue_bytes),
        down.clone(),
        half,
    );
    let mut ids = Vec::new();
    for i in 0..p.leechers {
        ids.push(net.add_node(
            Network::peer(content.leecher(config(p.seed * 1000 + 1 + i as u64)), None),
            LinkConfig::new(p.leecher_up_bps, p.queue_bytes),
            down.clone(),
            half,
        ));
    }
    if p.latency == Latency::AsTable {
        let n = p.leechers + 1;
        net.owd_matrix = Some(
            (0..n)
                .map(|a| (0..n).map(|b| as_owd(a, b)).collect())
                .collect(),
        );
    }
    // Tracker bootstrap: the seeder plus a random sample of other leechers, joining over
    // the first second.
    let mut joins: Vec<(u64, u32)> = ids.iter().map(|&id| (rng.below(1_000_000), id)).collect();
    joins.sort();
    for (at, id) in joins {
        net.run_until(Time::from_micros(at));
        let mut peers = vec![seeder];
        for _ in 0..p.bootstrap.min(p.leechers - 1) {
            let other = ids[rng.below(ids.len() as u64) as usize];
            if other != id && !peers.contains(&other) {
                peers.push(other);
            }
        }
        net.with_engine(id, |e, now| {
            for peer in peers {
                e.connect(peer, now);
            }
        });
    }
    let limit = Time::from_micros((p.limit_s * 1e6) as u64);
    net.run_while(Duration::from_millis(500), limit, |n| {
        ids.iter().all(|&id| n.engine(id).is_complete())
    });
    let completion_s = ids
        .iter()
        .enumerate()
        .map(|(i, &id)| {
            (
                net.peer_ref(id)
                    .completed_at
                    .map(|t| t.as_micros() as f64 / 1e6),
                as_of(i) + 1,
            )
        })
        .collect::<Vec<_>>();
    let corrupt_chunks = ids
        .iter()
        .map(|&id| net.engine(id).store().corrupt_writes)
        .sum::<u64>()
        + ids
            .iter()
            .filter(|&&id| {
                net.engine(id).is_complete() && !net.engine(id).store().matches_original()
            })
            .count() as u64;
    SwarmResult {
        leechers: p.leechers,
        complete: completion_s.iter().filter(|c| c.0.is_some()).count(),
        completion_s,
        corrupt_chunks,
        seeder_upload_ratio: net.engine(seeder).stats().bytes_uploaded as f64
            / p.content_len as f64,
        content_len: p.content_len,
    }
}
