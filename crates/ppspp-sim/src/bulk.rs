//! Bulk-transfer scenarios on one shared bottleneck (a dumbbell): every sender sits
//! behind one uplink of `bandwidth_bps` with a drop-tail queue; every receiver has its
//! own unlimited links. PPSPP flows are seeder→leecher pairs of real engines; TCP flows
//! are Reno-like. Used by the `link`, `capacity`, `delay`, `loss`, `latecomer` and
//! `priority` experiments and by the LEDBAT tests.

use crate::link::LinkConfig;
use crate::net::{Network, NodeId, NodeKind};
use crate::scenario::{Content, config};
use crate::tcp::{SEGMENT_BYTES, TcpReceiver, TcpSender};
use ppspp::congestion::CongestionConfig;
use ppspp::engine::EngineConfig;
use ppspp::time::Time;
use std::sync::Arc;
use std::time::Duration;

/// One flow across the bottleneck.
#[derive(Clone, Debug)]
pub enum Flow {
    /// A leecher connects to its own seeder at `start` (seconds); the seeder's channel
    /// priority changes at the given times (seconds).
    Ppspp {
        start: f64,
        congestion: CongestionConfig,
        priorities: Vec<(f64, u32)>,
    },
    /// A TCP-like transfer from `start` to `stop` (seconds).
    Tcp { start: f64, stop: f64 },
}

impl Flow {
    pub fn ledbat(start: f64) -> Flow {
        Flow::Ppspp {
            start,
            congestion: CongestionConfig::default(),
            priorities: Vec::new(),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Bulk {
    pub bandwidth_bps: u64,
    pub queue_bytes: usize,
    /// One-way propagation delay sender→receiver (and back).
    pub owd: Duration,
    /// Random loss on the bottleneck.
    pub loss: f64,
    pub duration_s: f64,
    pub sample_s: f64,
    pub flows: Vec<Flow>,
    /// Bytes of content each PPSPP flow can move (`None`: enough for the whole run).
    pub content_len: Option<usize>,
    pub seed: u64,
}

/// One sample of the run.
#[derive(Clone, Debug, Default)]
pub struct Sample {
    pub t: f64,
    /// Per flow: goodput over the last interval, Mbit/s.
    pub rate_mbps: Vec<f64>,
    /// Per flow: congestion window in datagrams (PPSPP: the seeder's; TCP: segments).
    pub cwnd: Vec<f64>,
    /// Per flow: payload bytes delivered so far.
    pub progress: Vec<u64>,
    /// Bottleneck queueing delay right now, ms.
    pub queue_ms: f64,
    /// Bottleneck wire bytes sent over the last interval / capacity.
    pub utilisation: f64,
}

pub struct BulkRun {
    pub samples: Vec<Sample>,
    pub content_len: usize,
    /// Per flow: when and why the leecher closed its channel to the seeder, if it did
    /// (an honest seeder closed as "misbehaving" is an engine bug, see EXPERIMENTS.md).
    pub closed: Vec<Option<(f64, String)>>,
}

impl BulkRun {
    /// Mean over samples with `from <= t <= to` of `f(sample)`.
    pub fn mean(&self, from: f64, to: f64, f: impl Fn(&Sample) -> f64) -> f64 {
        let xs: Vec<f64> = self
            .samples
            .iter()
            .filter(|s| s.t >= from - 1e-9 && s.t <= to + 1e-9)
            .map(f)
            .collect();
        if xs.is_empty() {
            0.0
        } else {
            xs.iter().sum::<f64>() / xs.len() as f64
        }
    }
}

struct Endpoints {
    sender: NodeId,
    receiver: NodeId,
}

pub fn run(b: &Bulk) -> BulkRun {
    let len = b.content_len.unwrap_or_else(|| {
        (b.bandwidth_bps as f64 / 8.0 * b.duration_s * 1.05) as usize + 64 * 1024
    });
    let content = Arc::new(Content::new(len, 1024, b.seed));
    let mut net = Network::new(b.seed);
    let up = net.add_link(LinkConfig::new(b.bandwidth_bps, b.queue_bytes).with_loss(b.loss));
    let down = net.add_link(LinkConfig::unlimited());
    let mut flows = Vec::new();
    for (i, f) in b.flows.iter().enumerate() {
        let i = i as u64;
        let (sender_kind, receiver_kind) = match f {
            Flow::Ppspp { congestion, .. } => {
                let cfg = EngineConfig {
                    congestion: congestion.clone(),
                    ..config(100 + 2 * i)
                };
                (
                    Network::peer(content.seeder(cfg.clone()), None),
                    Network::peer(
                        content.leecher(EngineConfig {
                            seed: 101 + 2 * i,
                            ..cfg
                        }),
                        None,
                    ),
                )
            }
            Flow::Tcp { start, stop } => {
                let receiver = net.nodes.len() as NodeId + 1;
                (
                    NodeKind::TcpSender(TcpSender::new(receiver, secs(*start), secs(*stop))),
                    NodeKind::TcpReceiver(TcpReceiver::default()),
                )
            }
        };
        let sender = net.add_node_on(sender_kind, up, down, b.owd);
        let receiver = net.add_node(
            receiver_kind,
            LinkConfig::unlimited(),
            LinkConfig::unlimited(),
            Duration::ZERO,
        );
        flows.push(Endpoints { sender, receiver });
    }
    // Timed actions: PPSPP starts and priority changes.
    let mut actions: Vec<(f64, usize, Option<u32>)> = Vec::new();
    for (i, f) in b.flows.iter().enumerate() {
        if let Flow::Ppspp {
            start, priorities, ..
        } = f
        {
            actions.push((*start, i, None));
            for &(t, p) in priorities {
                actions.push((t, i, Some(p)));
            }
        }
    }
    actions.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut next_action = 0;
    let mut samples = Vec::new();
    let mut last_progress = vec![0u64; flows.len()];
    let mut last_wire = 0u64;
    let steps = (b.duration_s / b.sample_s).round() as u64;
    for step in 1..=steps {
        let t = step as f64 * b.sample_s;
        // Run to each action inside this interval, then to the sample point.
        while next_action < actions.len() && actions[next_action].0 <= t {
            let (at, i, prio) = actions[next_action];
            net.run_until(secs(at));
            let (s, r) = (flows[i].sender, flows[i].receiver);
            match prio {
                None => net.with_engine(r, |e, now| {
                    e.connect(s, now);
                }),
                Some(p) => net.with_engine(s, |e, _| e.set_priority(&r, p)),
            }
            next_action += 1;
        }
        net.run_until(secs(t));
        let mut sample = Sample {
            t,
            ..Sample::default()
        };
        for (i, f) in flows.iter().enumerate() {
            let (progress, cwnd) = match &net.nodes[f.sender as usize].kind {
                NodeKind::Peer(p) => (
                    net.engine(f.receiver).stats().bytes_downloaded,
                    p.engine
                        .channel_stats()
                        .iter()
                        .find(|c| c.peer == f.receiver)
                        .map_or(0.0, |c| c.cwnd),
                ),
                NodeKind::TcpSender(s) => (s.acked * (SEGMENT_BYTES as u64 - 40), s.cwnd),
                NodeKind::TcpReceiver(_)
                | NodeKind::RtSource(_)
                | NodeKind::RtSink(_)
                | NodeKind::Alias { .. } => (0, 0.0),
            };
            sample
                .rate_mbps
                .push((progress - last_progress[i]) as f64 * 8.0 / b.sample_s / 1e6);
            last_progress[i] = progress;
            sample.progress.push(progress);
            sample.cwnd.push(cwnd);
        }
        let now = net.now;
        let link = &mut net.links[up];
        sample.queue_ms = link.queued_bytes(now) as f64 * 8.0 / b.bandwidth_bps as f64 * 1e3;
        let wire = link.stats.bytes;
        sample.utilisation = (wire - last_wire) as f64 * 8.0 / b.sample_s / b.bandwidth_bps as f64;
        last_wire = wire;
        samples.push(sample);
    }
    let closed = flows
        .iter()
        .map(|f| match &net.nodes[f.receiver as usize].kind {
            NodeKind::Peer(p) => p.events.iter().find_map(|(t, e)| match e {
                ppspp::engine::Event::PeerClosed { reason, .. } => {
                    Some((t.as_micros() as f64 / 1e6, reason.to_string()))
                }
                _ => None,
            }),
            _ => None,
        })
        .collect();
    BulkRun {
        samples,
        content_len: len,
        closed,
    }
}

pub fn secs(s: f64) -> Time {
    Time::from_micros((s * 1e6).round() as u64)
}
