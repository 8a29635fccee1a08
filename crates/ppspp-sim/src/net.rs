//! The discrete-event network: nodes (real engines, adversaries, TCP-like endpoints),
//! access links, propagation delays and one event queue ordered by (time, sequence), so a
//! run is the same bit for bit for a seed.
//!
//! A packet from `a` to `b` crosses `a`'s uplink, then the one-way propagation delay
//! between them (plus seeded jitter), then `b`'s downlink. Several nodes may share one
//! uplink (a dumbbell bottleneck). A link with strict priority is served packet by packet
//! (an event when each packet has left), real-time packets first.
//!
//! Path-level peers: a node may have other addresses (aliases), one per path through the
//! network's core. A packet to node `b`'s alias for path `k` crosses `a`'s uplink, the
//! core links of path `k` from `a` to `b`, that path's propagation delay, then `b`'s
//! downlink, and `b` sees it come from `a`'s alias for path `k` (its answer takes the same
//! path back).

use crate::adversary::{Mutation, mutate};
use crate::link::{Link, LinkConfig};
use crate::priority_queue::{Offer, StrictPriority};
use crate::realtime::{RtSink, RtSource};
use crate::store::CheckedStore;
use crate::tcp::{ACK_BYTES, SEGMENT_BYTES, TcpReceiver, TcpSeg, TcpSender};
use ppspp::engine::{Engine, Event};
use ppspp::rng::Rng;
use ppspp::time::Time;
use std::cmp::Ordering;
use std::collections::{BTreeMap, BinaryHeap};
use std::time::Duration;

pub type NodeId = u32;
pub type LinkId = usize;
pub type SimEngine = Engine<NodeId, CheckedStore>;

/// IP + UDP header bytes added to every PPSPP datagram on the wire.
pub const UDP_OVERHEAD: usize = 28;

/// A PPSPP peer: a real engine, optionally rewriting what it sends.
pub struct Peer {
    pub engine: SimEngine,
    pub mutation: Option<Mutation>,
    /// Everything the engine reported (Progress excluded), with the time.
    pub events: Vec<(Time, Event<NodeId>)>,
    pub completed_at: Option<Time>,
}

pub enum NodeKind {
    Peer(Box<Peer>),
    TcpSender(TcpSender),
    TcpReceiver(TcpReceiver),
    RtSource(RtSource),
    RtSink(RtSink),
    /// Another address of `node`, reached over its path `path` (see the module's text).
    Alias {
        node: NodeId,
        path: usize,
    },
}

/// One path through the network's core between two nodes: the links crossed between the
/// sender's uplink and the receiver's downlink, and the propagation delay of the whole.
#[derive(Clone, Debug)]
pub struct CorePath {
    pub links: Vec<LinkId>,
    pub delay: Duration,
}

pub struct Node {
    pub kind: NodeKind,
    pub uplink: LinkId,
    pub downlink: LinkId,
    /// Half of this node's share of a one-way delay (see [`Network::owd`]).
    pub delay: Duration,
    armed: Time,
}

#[derive(Clone, Debug)]
enum Body {
    Ppspp(Vec<u8>),
    Tcp(TcpSeg),
    /// A real-time packet and its sequence number: the one class a strict-priority link
    /// puts first.
    Rt(u64),
}

#[derive(Clone, Debug)]
struct Packet {
    from: NodeId,
    to: NodeId,
    /// The address the receiver sees it come from (`from`, or `from`'s alias for `path`).
    seen_from: NodeId,
    /// The core path it takes, and how many of its links it has crossed.
    path: Option<usize>,
    core_hop: usize,
    size: usize,
    body: Body,
}

enum EvKind {
    /// The packet reaches hop `hop` of its path (0 uplink, 1 propagation, 2 downlink,
    /// 3 delivered).
    Hop(Packet, u8),
    Timer(NodeId),
    /// A strict-priority link has put its packet on the wire: it serves the next.
    LinkFree(LinkId),
}

struct Scheduled {
    time: Time,
    seq: u64,
    kind: EvKind,
}

impl PartialEq for Scheduled {
    fn eq(&self, o: &Self) -> bool {
        (self.time, self.seq) == (o.time, o.seq)
    }
}
impl Eq for Scheduled {}
impl PartialOrd for Scheduled {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Scheduled {
    // Reversed: BinaryHeap is a max-heap and we want the earliest first.
    fn cmp(&self, o: &Self) -> Ordering {
        (o.time, o.seq).cmp(&(self.time, self.seq))
    }
}

/// Network-wide counters.
#[derive(Clone, Debug, Default)]
pub struct NetStats {
    pub delivered_packets: u64,
    pub dropped_packets: u64,
    pub events: u64,
}

pub struct Network {
    pub now: Time,
    pub nodes: Vec<Node>,
    pub links: Vec<Link>,
    /// One-way delays by (from, to), overriding the sum of the nodes' delays.
    pub owd_matrix: Option<Vec<Vec<Duration>>>,
    /// Each packet's propagation gets a uniform extra delay in [0, jitter).
    pub jitter: Duration,
    queue: BinaryHeap<Scheduled>,
    seq: u64,
    pub rng: Rng,
    /// Wire bytes delivered per (from, to), cumulative.
    pub delivered: BTreeMap<(NodeId, NodeId), u64>,
    pub stats: NetStats,
    /// The buffer engines write their datagrams into.
    send_buf: Vec<u8>,
    /// The waiting packets of each strict-priority link (with the hop they are at).
    priority: BTreeMap<LinkId, StrictPriority<(Packet, u8)>>,
    /// Core paths from one node to another, by path number.
    pub core_paths: BTreeMap<(NodeId, NodeId), Vec<CorePath>>,
    /// Each node's alias for a path number.
    aliases: BTreeMap<(NodeId, usize), NodeId>,
}

impl Network {
    pub fn new(seed: u64) -> Network {
        Network {
            now: Time::ZERO,
            nodes: Vec::new(),
            links: Vec::new(),
            owd_matrix: None,
            jitter: Duration::ZERO,
            queue: BinaryHeap::new(),
            seq: 0,
            rng: Rng::new(seed),
            delivered: BTreeMap::new(),
            stats: NetStats::default(),
            send_buf: Vec::new(),
            priority: BTreeMap::new(),
            core_paths: BTreeMap::new(),
            aliases: BTreeMap::new(),
        }
    }

    /// Adds `node`'s address for path number `path` (an existing one is returned).
    pub fn alias(&mut self, node: NodeId, path: usize) -> NodeId {
        if let Some(&a) = self.aliases.get(&(node, path)) {
            return a;
        }
        let (uplink, downlink) = {
            let n = &self.nodes[node as usize];
            (n.uplink, n.downlink)
        };
        let a = self.add_node_on(
            NodeKind::Alias { node, path },
            uplink,
            downlink,
            Duration::ZERO,
        );
        self.aliases.insert((node, path), a);
        a
    }

    /// The node behind an address, and the path number the address stands for.
    pub fn resolve(&self, addr: NodeId) -> (NodeId, Option<usize>) {
        match self.nodes[addr as usize].kind {
            NodeKind::Alias { node, path } => (node, Some(path)),
            _ => (addr, None),
        }
    }

    pub fn add_link(&mut self, config: LinkConfig) -> LinkId {
        let id = self.links.len();
        if config.strict_priority {
            let limit = config.queue_packets.unwrap_or(usize::MAX);
            self.priority.insert(id, StrictPriority::new(limit));
        }
        self.links.push(Link::new(config));
        id
    }

    /// Adds a node with its own uplink and downlink; `delay` is its half of every
    /// one-way delay (a→b takes `a.delay + b.delay`).
    pub fn add_node(
        &mut self,
        kind: NodeKind,
        up: LinkConfig,
        down: LinkConfig,
        delay: Duration,
    ) -> NodeId {
        let uplink = self.add_link(up);
        let downlink = self.add_link(down);
        self.add_node_on(kind, uplink, downlink, delay)
    }

    /// Adds a node on existing links (shared bottlenecks).
    pub fn add_node_on(
        &mut self,
        kind: NodeKind,
        uplink: LinkId,
        downlink: LinkId,
        delay: Duration,
    ) -> NodeId {
        let id = self.nodes.len() as NodeId;
        self.nodes.push(Node {
            kind,
            uplink,
            downlink,
            delay,
            armed: Time::NEVER,
        });
        self.service(id, false);
        id
    }

    /// Convenience: a peer node around `engine`.
    pub fn peer(engine: SimEngine, mutation: Option<Mutation>) -> NodeKind {
        NodeKind::Peer(Box::new(Peer {
            engine,
            mutation,
            events: Vec::new(),
            completed_at: None,
        }))
    }

    pub fn owd(&self, from: NodeId, to: NodeId) -> Duration {
        match &self.owd_matrix {
            Some(m) => m[from as usize][to as usize],
            None => self.nodes[from as usize].delay + self.nodes[to as usize].delay,
        }
    }

    pub fn engine(&self, id: NodeId) -> &SimEngine {
        match &self.nodes[id as usize].kind {
            NodeKind::Peer(p) => &p.engine,
            _ => panic!("node {id} is not a peer"),
        }
    }

    pub fn peer_ref(&self, id: NodeId) -> &Peer {
        match &self.nodes[id as usize].kind {
            NodeKind::Peer(p) => p,
            _ => panic!("node {id} is not a peer"),
        }
    }

    /// Runs `f` on a peer's engine now, then sends what it queued and re-arms its timer.
    pub fn with_engine<R>(&mut self, id: NodeId, f: impl FnOnce(&mut SimEngine, Time) -> R) -> R {
        let now = self.now;
        let r = match &mut self.nodes[id as usize].kind {
            NodeKind::Peer(p) => f(&mut p.engine, now),
            _ => panic!("node {id} is not a peer"),
        };
        self.service(id, false);
        r
    }

    pub fn tcp_sender(&self, id: NodeId) -> &TcpSender {
        match &self.nodes[id as usize].kind {
            NodeKind::TcpSender(s) => s,
            _ => panic!("node {id} is not a TCP sender"),
        }
    }

    fn push(&mut self, time: Time, kind: EvKind) {
        self.seq += 1;
        self.queue.push(Scheduled {
            time,
            seq: self.seq,
            kind,
        });
    }

    fn send(&mut self, from: NodeId, to: NodeId, size: usize, body: Body) {
        let (to, path) = self.resolve(to);
        let seen_from = match path {
            Some(p) => self.aliases.get(&(from, p)).copied().unwrap_or(from),
            None => from,
        };
        let pkt = Packet {
            from,
            to,
            seen_from,
            path,
            core_hop: 0,
            size,
            body,
        };
        self.hop(pkt, 0);
    }

    /// Moves a packet that reached hop `hop` at `self.now` on.
    fn hop(&mut self, pkt: Packet, hop: u8) {
        let now = self.now;
        match hop {
            0 | 2 => {
                let node = &self.nodes[pkt.from as usize];
                let link = if hop == 0 {
                    node.uplink
                } else {
                    self.nodes[pkt.to as usize].downlink
                };
                if self.priority.contains_key(&link) {
                    self.offer_priority(link, pkt, hop);
                    return;
                }
                match self.links[link].enqueue(now, pkt.size, &mut self.rng) {
                    Ok(t) => self.push(t, EvKind::Hop(pkt, hop + 1)),
                    Err(_) => self.stats.dropped_packets += 1,
                }
            }
            1 if pkt.path.is_some() => self.core_hop(pkt),
            1 => {
                let mut d = self.owd(pkt.from, pkt.to).as_micros() as u64;
                if !self.jitter.is_zero() {
                    d += self.rng.below(self.jitter.as_micros() as u64);
                }
                self.push(Time::from_micros(now.as_micros() + d), EvKind::Hop(pkt, 2));
            }
            _ => self.deliver(pkt),
        }
    }

    /// Moves a packet on a core path one link on, or, past the last, over the path's
    /// propagation delay to the receiver's downlink. Without such a path (none was set for
    /// this pair) it is dropped.
    fn core_hop(&mut self, mut pkt: Packet) {
        let now = self.now;
        let path = pkt.path.and_then(|p| {
            self.core_paths
                .get(&(pkt.from, pkt.to))
                .and_then(|paths| paths.get(p))
        });
        let Some(path) = path else {
            self.stats.dropped_packets += 1;
            return;
        };
        match path.links.get(pkt.core_hop).copied() {
            Some(link) => {
                pkt.core_hop += 1;
                match self.links[link].enqueue(now, pkt.size, &mut self.rng) {
                    Ok(t) => self.push(t, EvKind::Hop(pkt, 1)),
                    Err(_) => self.stats.dropped_packets += 1,
                }
            }
            None => {
                let at = now + path.delay;
                self.push(at, EvKind::Hop(pkt, 2));
            }
        }
    }

    /// Queues a packet on a strict-priority link and starts the link if it was idle.
    fn offer_priority(&mut self, link: LinkId, pkt: Packet, hop: u8) {
        let l = &mut self.links[link];
        if l.config.loss > 0.0 && self.rng.next_f64() < l.config.loss {
            l.stats.dropped_loss += 1;
            self.stats.dropped_packets += 1;
            return;
        }
        let high = matches!(pkt.body, Body::Rt(_));
        let q = self
            .priority
            .get_mut(&link)
            .expect("a strict-priority link");
        match q.offer((pkt, hop), high) {
            Offer::Queued => {}
            Offer::PushedOut(_) | Offer::Dropped => {
                l.stats.dropped_queue += 1;
                self.stats.dropped_packets += 1;
            }
        }
        if !q.busy {
            self.serve_priority(link);
        }
    }

    /// Puts a strict-priority link's next packet on the wire, if one waits.
    fn serve_priority(&mut self, link: LinkId) {
        let q = self
            .priority
            .get_mut(&link)
            .expect("a strict-priority link");
        let Some((pkt, hop)) = q.pop_next() else {
            q.busy = false;
            return;
        };
        q.busy = true;
        let l = &mut self.links[link];
        l.stats.packets += 1;
        l.stats.bytes += pkt.size as u64;
        let done = Time::from_micros(self.now.as_micros() + l.serialization_us(pkt.size));
        self.push(done, EvKind::Hop(pkt, hop + 1));
        self.push(done, EvKind::LinkFree(link));
    }

    fn deliver(&mut self, pkt: Packet) {
        self.stats.delivered_packets += 1;
        *self.delivered.entry((pkt.from, pkt.to)).or_default() += pkt.size as u64;
        let now = self.now;
        let to = pkt.to;
        let mut reply = None;
        match (&mut self.nodes[to as usize].kind, pkt.body) {
            (NodeKind::Peer(p), Body::Ppspp(bytes)) => {
                p.engine.handle_datagram(now, pkt.seen_from, &bytes);
            }
            (NodeKind::TcpReceiver(r), Body::Tcp(TcpSeg::Data { seq })) => {
                reply = Some(r.handle_data(seq));
            }
            (NodeKind::TcpSender(s), Body::Tcp(TcpSeg::Ack { next })) => {
                s.handle_ack(now, next);
            }
            (NodeKind::RtSink(r), Body::Rt(seq)) => r.arrivals.push((seq, now)),
            _ => {}
        }
        if let Some(ack) = reply {
            self.send(to, pkt.from, ACK_BYTES, Body::Tcp(ack));
        }
        self.service(to, false);
    }

    /// Sends whatever node `id` has queued, collects its events and re-arms its timer.
    fn service(&mut self, id: NodeId, from_timer: bool) {
        let now = self.now;
        let mut out: Vec<(NodeId, usize, Body)> = Vec::new();
        let mut buf = std::mem::take(&mut self.send_buf);
        let timeout = match &mut self.nodes[id as usize].kind {
            NodeKind::Peer(p) => {
                // Each datagram in flight on a simulated link is a copy of its own.
                while let Some(to) = p.engine.poll_transmit(now, &mut buf) {
                    let payload = match p.mutation {
                        Some(m) => match mutate(m, &buf) {
                            Some(b) => b,
                            None => continue,
                        },
                        None => buf.clone(),
                    };
                    out.push((to, payload.len() + UDP_OVERHEAD, Body::Ppspp(payload)));
                }

                while let Some(e) = p.engine.poll_event() {
                    if matches!(e, Event::Progress { .. }) {
                        continue;
                    }
                    if matches!(e, Event::Complete) && p.completed_at.is_none() {
                        p.completed_at = Some(now);
                    }
                    p.events.push((now, e));
                }
                p.engine.poll_timeout()
            }
            NodeKind::TcpSender(s) => {
                while let Some(seg) = s.poll_transmit() {
                    out.push((s.peer, SEGMENT_BYTES, Body::Tcp(seg)));
                }
                s.poll_timeout()
            }
            NodeKind::RtSource(s) => {
                while let Some(seq) = s.poll_transmit(now) {
                    out.push((s.to, s.packet_bytes, Body::Rt(seq)));
                }
                s.poll_timeout()
            }
            NodeKind::TcpReceiver(_) | NodeKind::RtSink(_) | NodeKind::Alias { .. } => None,
        };
        self.send_buf = buf;
        for (to, size, body) in out {
            self.send(id, to, size, body);
        }
        let node = &mut self.nodes[id as usize];
        if let Some(t) = timeout {
            // `SansIo::poll_timeout`'s promise: once its timers ran, a peer never asks to
            // be woken again at the same instant (that would stall the simulated clock).
            assert!(
                !(from_timer && t <= now && matches!(node.kind, NodeKind::Peer(_))),
                "node {id} asked to be woken at {t:?} after its timers ran at {now:?}"
            );
            let t = t.max(now);
            if t != node.armed {
                node.armed = t;
                self.push(t, EvKind::Timer(id));
            }
        } else {
            node.armed = Time::NEVER;
        }
    }

    fn fire(&mut self, id: NodeId) {
        let now = self.now;
        let node = &mut self.nodes[id as usize];
        if node.armed != now {
            return;
        }
        node.armed = Time::NEVER;
        match &mut node.kind {
            NodeKind::Peer(p) => p.engine.handle_timeout(now),
            NodeKind::TcpSender(s) => s.handle_timeout(now),
            NodeKind::TcpReceiver(_)
            | NodeKind::RtSource(_)
            | NodeKind::RtSink(_)
            | NodeKind::Alias { .. } => {}
        }
        self.service(id, true);
    }

    /// Processes every event up to and including `until`; the clock ends at `until`.
    pub fn run_until(&mut self, until: Time) {
        while let Some(top) = self.queue.peek() {
            if top.time > until {
                break;
            }
            let ev = self.queue.pop().expect("peeked");
            self.now = ev.time;
            self.stats.events += 1;
            match ev.kind {
                EvKind::Hop(pkt, hop) => self.hop(pkt, hop),
                EvKind::Timer(id) => self.fire(id),
                EvKind::LinkFree(link) => self.serve_priority(link),
            }
        }
        self.now = self.now.max(until);
    }

    /// Runs in steps of `step` until `done` holds or `limit`; returns whether `done` held.
    pub fn run_while(
        &mut self,
        step: Duration,
        limit: Time,
        mut done: impl FnMut(&Network) -> bool,
    ) -> bool {
        while self.now < limit {
            if done(self) {
                return true;
            }
            let next = Time::from_micros(self.now.as_micros() + step.as_micros() as u64);
            self.run_until(next.min(limit));
        }
        done(self)
    }

    /// Peer ids (engine nodes).
    pub fn peer_ids(&self) -> Vec<NodeId> {
        (0..self.nodes.len() as NodeId)
            .filter(|&i| matches!(self.nodes[i as usize].kind, NodeKind::Peer(_)))
            .collect()
    }
}
