//! A deterministic network for sans-IO peers at addresses 0, 1, …: one fixed delay, seeded
//! loss, and hooks to cut, drop, corrupt or rewrite a node's datagrams. It is the driver
//! loop of `SansIo` in virtual time; the simulator (`ppspp-sim`) adds links with rates,
//! queues and jitter.

use ppspp::engine::SansIo;
use ppspp::time::Time;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::time::Duration;

/// A datagram in flight: (arrival time, sequence, from, to, bytes).
type Packet = Reverse<(Time, u64, u32, u32, Vec<u8>)>;

/// Rewrites a node's datagrams on their way (an attacker built from an honest engine).
pub type Rewrite = Box<dyn FnMut(&[u8]) -> Vec<u8>>;

/// Sees every datagram a node sends, before any loss: `(from, to, bytes)`.
pub type Observer = Box<dyn FnMut(u32, u32, &[u8])>;

pub struct VirtualNet {
    queue: BinaryHeap<Packet>,
    pub seq: u64,
    pub delay: Duration,
    pub loss_per_mille: u64,
    rng: u64,
    pub delivered: u64,
    pub dropped: u64,
    /// Nodes cut off from the network (their datagrams vanish both ways).
    pub cut: Vec<u32>,
    /// Drop the next datagram from this node.
    pub drop_next_from: Option<u32>,
    /// Flip the last byte of every datagram over 512 bytes (DATA) from this node.
    pub corrupt_from: Option<u32>,
    pub rewrite: BTreeMap<u32, Rewrite>,
    pub observer: Option<Observer>,
    /// Timer wake-ups that sent nothing.
    pub idle_wakeups: u64,
    /// Where the last run stopped.
    pub now: Time,
    buf: Vec<u8>,
}

impl VirtualNet {
    pub fn new(delay: Duration, loss_per_mille: u64, seed: u64) -> VirtualNet {
        VirtualNet {
            queue: BinaryHeap::new(),
            seq: 0,
            delay,
            loss_per_mille,
            rng: seed | 1,
            delivered: 0,
            dropped: 0,
            cut: Vec::new(),
            drop_next_from: None,
            corrupt_from: None,
            rewrite: BTreeMap::new(),
            observer: None,
            idle_wakeups: 0,
            now: Time::ZERO,
            buf: Vec::new(),
        }
    }

    fn random(&mut self) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng
    }

    /// Puts a datagram on the network at `now`.
    pub fn send(&mut self, now: Time, from: u32, to: u32, bytes: &[u8]) {
        let mut bytes = match self.rewrite.get_mut(&from) {
            Some(f) => f(bytes),
            None => bytes.to_vec(),
        };
        if let Some(o) = self.observer.as_mut() {
            o(from, to, &bytes);
        }
        if self.drop_next_from == Some(from) {
            self.drop_next_from = None;
            self.dropped += 1;
            return;
        }
        if self.corrupt_from == Some(from) && bytes.len() > 512 {
            let last = bytes.len() - 1;
            bytes[last] ^= 0x55;
        }
        if self.cut.contains(&from) || self.cut.contains(&to) {
            self.dropped += 1;
            return;
        }
        if self.loss_per_mille > 0 && self.random() % 1000 < self.loss_per_mille {
            self.dropped += 1;
            return;
        }
        self.seq += 1;
        self.queue
            .push(Reverse((now + self.delay, self.seq, from, to, bytes)));
    }

    /// Sends everything `node` (at address `id`) has to send at `now`; true if it sent.
    pub fn drain<N: SansIo<Addr = u32>>(&mut self, now: Time, id: u32, node: &mut N) -> bool {
        let mut buf = std::mem::take(&mut self.buf);
        let mut sent = false;
        while let Some(to) = node.poll_transmit(now, &mut buf) {
            self.send(now, id, to, &buf);
            sent = true;
        }
        self.buf = buf;
        sent
    }

    /// Runs `nodes` from where the last run stopped until `done` or `limit`; returns the
    /// time reached.
    pub fn run<N: SansIo<Addr = u32>>(
        &mut self,
        nodes: &mut [N],
        limit: Time,
        done: impl Fn(&[N]) -> bool,
    ) -> Time {
        let mut now = self.now;
        // An engine that keeps asking to be woken "now" must fail a test, not hang it.
        let mut steps = 0u64;
        for (i, n) in nodes.iter_mut().enumerate() {
            self.drain(now, i as u32, n);
        }
        while now < limit && !done(nodes) {
            steps += 1;
            assert!(steps < 5_000_000, "the engines spun at {now:?}");
            let next_timer = nodes
                .iter()
                .filter_map(|n| n.poll_timeout())
                .min()
                .unwrap_or(Time::NEVER);
            let next_packet = self.queue.peek().map_or(Time::NEVER, |Reverse((t, ..))| *t);
            let next = next_timer.min(next_packet).max(now);
            if next > limit {
                now = limit;
                break;
            }
            now = next;
            while self.queue.peek().is_some_and(|Reverse((t, ..))| *t <= now) {
                let Some(Reverse((_, _, from, to, bytes))) = self.queue.pop() else {
                    break;
                };
                if self.cut.contains(&to) {
                    continue;
                }
                if let Some(node) = nodes.get_mut(to as usize) {
                    self.delivered += 1;
                    node.handle_datagram(now, from, &bytes);
                    self.drain(now, to, node);
                }
            }
            for (i, n) in nodes.iter_mut().enumerate() {
                if n.poll_timeout().is_some_and(|t| t <= now) {
                    n.handle_timeout(now);
                    let sent = self.drain(now, i as u32, n);
                    if !sent {
                        self.idle_wakeups += 1;
                    }
                    let next = n.poll_timeout();
                    assert!(
                        next.is_none_or(|t| t > now),
                        "node {i} asked to be woken at {next:?} after its timers ran at {now:?}"
                    );
                }
            }
        }
        self.now = now;
        now
    }
}

/// A datagram polled from a peer and copied out, for tests that look at it.
pub struct Transmitted<A> {
    pub to: A,
    pub payload: Vec<u8>,
}

/// The next datagram `node` sends at `now`, if any.
pub fn poll<N: SansIo>(node: &mut N, now: Time) -> Option<Transmitted<N::Addr>> {
    let mut payload = Vec::new();
    let to = node.poll_transmit(now, &mut payload)?;
    Some(Transmitted { to, payload })
}
