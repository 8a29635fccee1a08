//! The coexistence scenario (the wireless coexistence paper,
//! ../shared/papers/p2p-wireless-coexistence.txt): one host's P2P traffic beside a
//! real-time flow on a wireless-like access link. The host uploads to 4 peers over a
//! 1 Mbit/s uplink and may download from others over a 10 Mbit/s downlink, whose
//! acknowledgements share the uplink; the base station buffers a number of packets each
//! way. The host sends a constant-rate real-time flow (576-byte packets) over the same
//! uplink. The P2P traffic is TCP-like or ppspp with LEDBAT, its upload optionally capped,
//! and the uplink optionally a strict-priority queue for the real-time packets (DiffServ).
//! Used by the `coexist` experiment and its test.

use crate::bulk::secs;
use crate::link::LinkConfig;
use crate::net::{LinkId, Network, NodeId, NodeKind};
use crate::realtime::{RtSink, RtSource, percentile};
use crate::scenario::{Content, config};
use crate::tcp::{SEGMENT_BYTES, TcpReceiver, TcpSender};
use ppspp::engine::EngineConfig;
use std::time::Duration;

pub const UPLINK_BPS: u64 = 1_000_000;
pub const DOWNLINK_BPS: u64 = 10_000_000;
/// One-way propagation delay from the host to every other end.
pub const OWD: Duration = Duration::from_millis(50);
/// Upload connections, as the paper's 4 TCP connections per direction.
pub const UPLOADS: usize = 4;
/// The real-time flow's packets, as the paper's.
pub const MEDIA_PACKET: usize = 576;
/// Inter-arrival percentiles measured.
pub const PERCENTILES: [f64; 5] = [5.0, 25.0, 50.0, 75.0, 95.0];

/// What carries the P2P traffic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum P2p {
    /// One TCP-like connection per peer (the paper's baseline).
    TcpLike,
    /// ppspp with LEDBAT, the host one engine. `coupled`: its channels share one additive
    /// increase (the default); else each is on its own (RFC 6817).
    Ledbat { coupled: bool },
}

/// One run's settings.
#[derive(Clone, Debug)]
pub struct Coexist {
    /// The real-time flow's rate (64 kbit/s audio, 600 kbit/s video in the paper).
    pub media_bps: u64,
    /// What carries the P2P traffic.
    pub p2p: P2p,
    /// The uploads together send at most this (bit/s; `None`: no cap).
    pub upload_cap_bps: Option<u64>,
    /// The uplink serves the real-time packets first.
    pub strict_priority: bool,
    /// Download connections (0: uploads only).
    pub downloads: usize,
    /// Packets the base station buffers each way.
    pub buffer_packets: usize,
    /// The real-time flow runs from `media_start_s` to `media_stop_s`; P2P the whole run,
    /// which goes on long enough after the stop for the last packets to arrive.
    pub media_start_s: f64,
    pub media_stop_s: f64,
    pub run_s: f64,
}

/// What one run measured.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Inter-arrival percentiles (see [`PERCENTILES`]), ms.
    pub gaps_ms: [f64; 5],
    /// The real-time packets sent that never arrived.
    pub loss: f64,
    /// The uploads' goodput while the real-time flow ran, kbit/s.
    pub upload_kbps: f64,
    /// The downloads' goodput while the real-time flow ran, kbit/s.
    pub download_kbps: f64,
}

impl Coexist {
    /// The real-time flow's inter-arrival time when nothing disturbs it, ms.
    pub fn expected_gap_ms(&self) -> f64 {
        MEDIA_PACKET as f64 * 8.0 / self.media_bps as f64 * 1e3
    }

    /// Bytes of content a run can move at most (every flow starts from the beginning).
    pub fn content_len(&self) -> usize {
        let fastest = if self.downloads > 0 {
            DOWNLINK_BPS
        } else {
            UPLINK_BPS
        };
        (fastest as f64 / 8.0 * self.run_s * 1.05) as usize
    }
}

/// One P2P connection and where to read its progress.
enum Transfer {
    Ppspp { leecher: NodeId },
    Tcp { sender: NodeId },
}

fn delivered(net: &Network, transfers: &[Transfer]) -> u64 {
    transfers
        .iter()
        .map(|u| match u {
            Transfer::Ppspp { leecher } => net.engine(*leecher).stats().bytes_downloaded,
            Transfer::Tcp { sender } => net.tcp_sender(*sender).acked * (SEGMENT_BYTES as u64 - 40),
        })
        .sum()
}

/// A node at the far end: unlimited links, the whole one-way delay on the host's side.
fn far_node(net: &mut Network, kind: NodeKind) -> NodeId {
    net.add_node(
        kind,
        LinkConfig::unlimited(),
        LinkConfig::unlimited(),
        Duration::ZERO,
    )
}

/// The host's side of ppspp transfers.
#[derive(Clone, Copy)]
struct Host {
    /// Its uplink and downlink.
    links: (LinkId, LinkId),
    /// Its engine's LEDBAT channels are coupled.
    coupled: bool,
}

/// ppspp between the host and `peers` far peers. The host is one engine, as a client is
/// one peer of a swarm: it seeds to them if `upload` (at most `cap_bps` together), else
/// leeches from them. The far peers do not look for each other (no PEX). Engines get
/// seeds from `seed` on.
fn ppspp_transfers(
    net: &mut Network,
    content: &Content,
    host: Host,
    upload: bool,
    peers: usize,
    seed: u64,
    cap_bps: Option<u64>,
) -> Vec<Transfer> {
    if peers == 0 {
        return Vec::new();
    }
    let leecher = |seed| {
        content.leecher(EngineConfig {
            pex: false,
            ..config(seed)
        })
    };
    let mut host_config = config(seed);
    host_config.congestion.coupled = host.coupled;
    let host_engine = if upload {
        content.seeder(EngineConfig {
            upload_limit: cap_bps.map(|bps| bps / 8),
            ..host_config
        })
    } else {
        content.leecher(EngineConfig {
            pex: false,
            ..host_config
        })
    };
    let (up, down) = host.links;
    let at_host = net.add_node_on(Network::peer(host_engine, None), up, down, OWD);
    let mut transfers = Vec::new();
    for i in 1..=peers as u64 {
        if upload {
            let far = far_node(net, Network::peer(leecher(seed + i), None));
            net.with_engine(far, |e, now| {
                e.connect(at_host, now);
            });
            transfers.push(Transfer::Ppspp { leecher: far });
        } else {
            let far = far_node(net, Network::peer(content.seeder(config(seed + i)), None));
            net.with_engine(at_host, |e, now| {
                e.connect(far, now);
            });
        }
    }
    if !upload {
        transfers.push(Transfer::Ppspp { leecher: at_host });
    }
    transfers
}

/// TCP-like connections between the host and `count` far ends, one each: the host sends
/// if `upload`, else receives; `cap_bps` caps each sender.
fn tcp_transfers(
    net: &mut Network,
    c: &Coexist,
    host: (LinkId, LinkId),
    upload: bool,
    count: usize,
    cap_bps: Option<u64>,
) -> Vec<Transfer> {
    let place = |net: &mut Network, kind: NodeKind, at_host: bool| {
        if at_host {
            net.add_node_on(kind, host.0, host.1, OWD)
        } else {
            far_node(net, kind)
        }
    };
    (0..count)
        .map(|_| {
            let receiver = place(net, NodeKind::TcpReceiver(TcpReceiver::default()), !upload);
            let mut tcp = TcpSender::new(receiver, secs(0.0), secs(c.run_s));
            if let Some(bps) = cap_bps {
                tcp = tcp.with_rate_limit(bps);
            }
            let sender = place(net, NodeKind::TcpSender(tcp), upload);
            Transfer::Tcp { sender }
        })
        .collect()
}

/// Runs one scenario over `content` (at least [`Coexist::content_len`] bytes).
pub fn run(c: &Coexist, content: &Content, seed: u64) -> Outcome {
    let mut net = Network::new(seed);
    let mut up_cfg = LinkConfig::packets(UPLINK_BPS, c.buffer_packets);
    if c.strict_priority {
        up_cfg = up_cfg.with_strict_priority();
    }
    let up = net.add_link(up_cfg);
    let down = net.add_link(LinkConfig::packets(DOWNLINK_BPS, c.buffer_packets));
    let host = (up, down);
    let (uploads, downloads) = if let P2p::Ledbat { coupled } = c.p2p {
        let host = Host {
            links: host,
            coupled,
        };
        (
            ppspp_transfers(
                &mut net,
                content,
                host,
                true,
                UPLOADS,
                100,
                c.upload_cap_bps,
            ),
            ppspp_transfers(&mut net, content, host, false, c.downloads, 200, None),
        )
    } else {
        let per_upload_cap = c.upload_cap_bps.map(|cap| cap / UPLOADS as u64);
        (
            tcp_transfers(&mut net, c, host, true, UPLOADS, per_upload_cap),
            // From far peers to the host, their acknowledgements on its uplink.
            tcp_transfers(&mut net, c, host, false, c.downloads, None),
        )
    };
    let sink = far_node(&mut net, NodeKind::RtSink(RtSink::default()));
    let source = RtSource::new(
        sink,
        c.media_bps,
        MEDIA_PACKET,
        secs(c.media_start_s),
        secs(c.media_stop_s),
    );
    let source = net.add_node_on(NodeKind::RtSource(source), up, down, OWD);
    net.run_until(secs(c.media_start_s));
    let before = (delivered(&net, &uploads), delivered(&net, &downloads));
    net.run_until(secs(c.media_stop_s));
    let up_bytes = delivered(&net, &uploads) - before.0;
    let down_bytes = delivered(&net, &downloads) - before.1;
    net.run_until(secs(c.run_s));
    let (NodeKind::RtSink(sink), NodeKind::RtSource(source)) = (
        &net.nodes[sink as usize].kind,
        &net.nodes[source as usize].kind,
    ) else {
        unreachable!("the nodes were made as a sink and a source")
    };
    let gaps = sink.inter_arrivals_ms();
    let media_s = c.media_stop_s - c.media_start_s;
    Outcome {
        gaps_ms: PERCENTILES.map(|p| percentile(&gaps, p)),
        loss: sink.loss(source.sent),
        upload_kbps: up_bytes as f64 * 8.0 / media_s / 1e3,
        download_kbps: down_bytes as f64 * 8.0 / media_s / 1e3,
    }
}
