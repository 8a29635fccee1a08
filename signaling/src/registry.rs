//! Rooms and peers: who is in which swarm, who knows whom, and how to reach them.
//!
//! One mutex guards the whole registry; every operation under it is short (a hash look-up,
//! a sample of at most `sample_size` ids, or one push per peer told of a departure), nothing
//! awaits while holding it, and nothing is logged under it above debug level.
//!
//! Departures: a peer that leaves is announced to the peers that know its id (those given
//! it in a `welcome` sample, and those it exchanged signals with), since only they can act
//! on it. The rest of the room is told too while the room's announcement budget lasts
//! (`room_notice_rate`), so that a leave costs the server in proportion to what the
//! leaver did (its samples and signals), not to the size of its room.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::AtomicUsize;
use std::time::Instant;

use axum::extract::ws::Utf8Bytes;

use crate::mailbox::{Budget, Mailbox, Refused};
use crate::protocol::{ErrorCode, PEER_ID_HEX_LEN, ServerMessage};

/// What the registry hands to a connection's queue.
pub(crate) type Outbound = Utf8Bytes;

/// How many seconds of `room_notice_rate` a room may bank.
pub(crate) const NOTICE_BURST_SECS: f64 = 10.0;

/// A peer id as the registry keeps it (the 16 random bytes).
pub(crate) type PeerKey = u128;

/// The wire form of a peer id: 32 lowercase hex digits.
pub(crate) fn peer_id_hex(key: PeerKey) -> String {
    format!("{key:032x}")
}

/// Parses the wire form; `None` for anything that cannot be a server-assigned id.
pub(crate) fn parse_peer_id(s: &str) -> Option<PeerKey> {
    if s.len() != PEER_ID_HEX_LEN || !s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    u128::from_str_radix(s, 16).ok()
}

struct PeerEntry {
    swarm: Arc<str>,
    /// Index of this peer in its room's `members`.
    index: usize,
    mailbox: Arc<Mailbox>,
    /// Peers that know this peer's id: told when it leaves.
    watchers: HashSet<PeerKey>,
    /// Peers whose id this peer knows (it is in their `watchers`).
    knows: HashSet<PeerKey>,
}

/// A token bucket of `peer-left` notices a room may broadcast beyond the targeted ones.
struct NoticeBudget {
    tokens: f64,
    last: Instant,
}

struct Room {
    members: Vec<PeerKey>,
    notices: NoticeBudget,
}

#[derive(Default)]
struct Inner {
    rooms: HashMap<Arc<str>, Room>,
    peers: HashMap<PeerKey, PeerEntry>,
}

/// Counts for the health endpoint.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Counts {
    pub rooms: usize,
    pub peers: usize,
}

/// Why a join was refused.
#[derive(Debug)]
pub(crate) struct JoinRefused(pub ErrorCode, pub String);

/// What became of a relayed signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Relayed {
    Delivered,
    /// Not a peer of the sender's room (or the sender itself).
    UnknownPeer,
    /// The addressee's queue has no room for it (see [`Refused`]).
    Busy(Refused),
}

/// The limits the registry applies.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub budget: Budget,
    pub max_rooms: usize,
    pub max_peers_per_room: usize,
    pub sample_size: usize,
    pub room_notice_rate: f64,
}

/// The room registry.
pub(crate) struct Registry {
    inner: Mutex<Inner>,
    limits: Limits,
    /// Bytes queued in all mailboxes.
    queued: Arc<AtomicUsize>,
}

/// A fresh random peer id: 16 bytes from the thread RNG (ChaCha seeded by the OS).
fn new_peer_key() -> PeerKey {
    let mut bytes = [0u8; 16];
    rand::fill(&mut bytes);
    u128::from_be_bytes(bytes)
}

impl Registry {
    pub(crate) fn new(limits: Limits) -> Registry {
        Registry {
            inner: Mutex::default(),
            limits,
            queued: Arc::new(AtomicUsize::new(0)),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave the maps inconsistent in a way that
        // matters more than refusing all service would, so recover from poisoning.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn counts(&self) -> Counts {
        let g = self.lock();
        Counts {
            rooms: g.rooms.len(),
            peers: g.peers.len(),
        }
    }

    /// Bytes queued for all clients.
    pub(crate) fn queued_bytes(&self) -> usize {
        self.queued.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Adds a new peer to `swarm`'s room. Returns its id, its mailbox and a random sample of
    /// at most `sample_size` of the peers that were already there.
    pub(crate) fn join(
        &self,
        swarm: &str,
    ) -> Result<(String, Arc<Mailbox>, Vec<String>), JoinRefused> {
        let lim = self.limits;
        let mut g = self.lock();
        let inner = &mut *g;
        let room_len = inner.rooms.get(swarm).map(|r| r.members.len());
        match room_len {
            None if inner.rooms.len() >= lim.max_rooms => {
                return Err(JoinRefused(
                    ErrorCode::TooManyRooms,
                    format!("the server has its maximum of {} rooms", lim.max_rooms),
                ));
            }
            Some(n) if n >= lim.max_peers_per_room => {
                return Err(JoinRefused(
                    ErrorCode::RoomFull,
                    format!(
                        "the room has its maximum of {} peers",
                        lim.max_peers_per_room
                    ),
                ));
            }
            _ => {}
        }
        let mut key = new_peer_key();
        while inner.peers.contains_key(&key) {
            key = new_peer_key();
        }
        let (swarm, room) = match inner.rooms.get_key_value(swarm) {
            Some((k, _)) => {
                let k = k.clone();
                let room = inner.rooms.get_mut(&k).expect("room just found");
                (k, room)
            }
            None => {
                let k: Arc<str> = Arc::from(swarm);
                let room = inner.rooms.entry(k.clone()).or_insert(Room {
                    members: Vec::new(),
                    notices: NoticeBudget {
                        tokens: lim.room_notice_rate * NOTICE_BURST_SECS,
                        last: Instant::now(),
                    },
                });
                (k, room)
            }
        };
        let n = room.members.len();
        let amount = lim.sample_size.min(n);
        let mut rng = rand::rng();
        let sample: Vec<PeerKey> = rand::seq::index::sample(&mut rng, n, amount)
            .into_iter()
            .map(|i| room.members[i])
            .collect();
        room.members.push(key);
        for s in &sample {
            if let Some(p) = inner.peers.get_mut(s) {
                p.watchers.insert(key);
            }
        }
        let mailbox = Arc::new(Mailbox::new(lim.budget, self.queued.clone()));
        inner.peers.insert(
            key,
            PeerEntry {
                swarm,
                index: n,
                mailbox: mailbox.clone(),
                watchers: HashSet::new(),
                knows: sample.iter().copied().collect(),
            },
        );
        let ids = sample.into_iter().map(peer_id_hex).collect();
        Ok((peer_id_hex(key), mailbox, ids))
    }

    /// Removes `peer_id` (if still present) and tells those who should know (see the module
    /// documentation). Peers whose queue has no room left even for that notice are removed
    /// too, as slow readers (their connection sees its mailbox closed and disconnects).
    pub(crate) fn leave(&self, peer_id: &str) {
        let Some(key) = parse_peer_id(peer_id) else {
            return;
        };
        let mut g = self.lock();
        let mut pending = vec![key];
        while let Some(k) = pending.pop() {
            remove_and_announce(&mut g, &self.limits, k, &mut pending);
        }
    }

    /// Delivers `text` (an already printed `signal`) from `from` to `to`, both now knowing
    /// each other. Nothing is delivered unless [`Relayed::Delivered`].
    pub(crate) fn relay(&self, from: &str, to: &str, text: Outbound) -> Relayed {
        let (Some(from), Some(to)) = (parse_peer_id(from), parse_peer_id(to)) else {
            return Relayed::UnknownPeer;
        };
        let mut g = self.lock();
        let (Some(sender), Some(target)) = (g.peers.get(&from), g.peers.get(&to)) else {
            return Relayed::UnknownPeer;
        };
        if from == to || sender.swarm != target.swarm {
            return Relayed::UnknownPeer;
        }
        if let Err(refused) = target.mailbox.push_signal(from, text) {
            return Relayed::Busy(refused);
        }
        for (a, b) in [(from, to), (to, from)] {
            if let Some(p) = g.peers.get_mut(&a) {
                p.watchers.insert(b);
                p.knows.insert(b);
            }
        }
        Relayed::Delivered
    }
}

fn remove_and_announce(
    inner: &mut Inner,
    limits: &Limits,
    key: PeerKey,
    pending: &mut Vec<PeerKey>,
) {
    let Some(entry) = inner.peers.remove(&key) else {
        return;
    };
    for k in &entry.knows {
        if let Some(p) = inner.peers.get_mut(k) {
            p.watchers.remove(&key);
        }
    }
    for w in &entry.watchers {
        if let Some(p) = inner.peers.get_mut(w) {
            p.knows.remove(&key);
        }
    }
    let Some(room) = inner.rooms.get_mut(&entry.swarm) else {
        return;
    };
    room.members.swap_remove(entry.index);
    if let Some(moved) = room.members.get(entry.index)
        && let Some(p) = inner.peers.get_mut(moved)
    {
        p.index = entry.index;
    }
    if room.members.is_empty() {
        inner.rooms.remove(&entry.swarm);
        return;
    }
    let text: Outbound = ServerMessage::PeerLeft {
        peer_id: peer_id_hex(key),
    }
    .to_json()
    .into();
    let now = Instant::now();
    let b = &mut room.notices;
    let depth = limits.room_notice_rate * NOTICE_BURST_SECS;
    b.tokens =
        (b.tokens + now.duration_since(b.last).as_secs_f64() * limits.room_notice_rate).min(depth);
    b.last = now;
    let everyone = room.members.len() as f64;
    let told: Vec<PeerKey> = if b.tokens >= everyone {
        b.tokens -= everyone;
        room.members.clone()
    } else {
        entry.watchers.iter().copied().collect()
    };
    for member in told {
        if let Some(p) = inner.peers.get(&member)
            && !p.mailbox.push_notice(text.clone())
        {
            tracing::debug!(peer = %peer_id_hex(member), "queue full; dropping slow reader");
            p.mailbox.close();
            pending.push(member);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn swarm(c: char) -> String {
        std::iter::repeat_n(c, 40).collect()
    }

    fn registry(total: usize, rate: f64) -> Registry {
        Registry::new(Limits {
            budget: Budget::new(total, total),
            max_rooms: 10,
            max_peers_per_room: 100,
            sample_size: 5,
            room_notice_rate: rate,
        })
    }

    #[test]
    fn peer_ids_round_trip() {
        let k = new_peer_key();
        assert_eq!(parse_peer_id(&peer_id_hex(k)), Some(k));
        assert_eq!(parse_peer_id(&"A".repeat(32)), None);
        assert_eq!(parse_peer_id(&"a".repeat(31)), None);
        assert_eq!(parse_peer_id("+0000000000000000000000000000000"), None);
    }

    #[test]
    fn join_sample_leave_keeps_indices_consistent() {
        let reg = registry(1 << 20, 1000.0);
        let mut boxes = Vec::new();
        let mut ids = Vec::new();
        for _ in 0..30 {
            let (id, mailbox, sample) = reg.join(&swarm('a')).unwrap();
            assert_eq!(id.len(), 32);
            assert!(sample.len() <= 5 && sample.len() <= ids.len());
            assert!(sample.iter().all(|s| ids.contains(s)));
            ids.push(id);
            boxes.push(mailbox);
        }
        // Remove from the middle, then relay to every remaining peer to check the index
        // bookkeeping stayed right.
        for id in ids.drain(3..10) {
            reg.leave(&id);
        }
        assert_eq!(reg.counts().peers, 23);
        for id in &ids[1..] {
            assert_eq!(reg.relay(&ids[0], id, "x".into()), Relayed::Delivered);
        }
        assert_eq!(
            reg.relay(&ids[0], &ids[0], "x".into()),
            Relayed::UnknownPeer
        );
        for id in ids.clone() {
            reg.leave(&id);
        }
        let c = reg.counts();
        assert_eq!((c.rooms, c.peers), (0, 0));
        drop(boxes);
        assert_eq!(reg.queued_bytes(), 0);
    }

    #[test]
    fn departures_go_to_those_who_know_once_the_budget_is_spent() {
        // No broadcast budget at all: only targeted notices.
        let reg = registry(1 << 20, 0.0);
        let (a, box_a, _) = reg.join(&swarm('b')).unwrap();
        let (b, box_b, sample) = reg.join(&swarm('b')).unwrap();
        assert_eq!(sample, vec![a.clone()]);
        let (c, box_c, _) = reg.join(&swarm('b')).unwrap();
        // b knows a (sample); a learns c from c's signal.
        assert_eq!(reg.relay(&c, &a, "hi".into()), Relayed::Delivered);
        reg.leave(&c);
        // a heard c leave (they talked); b did not (it never heard of c) — except that c's
        // sample held b, which c knew, not the reverse.
        assert_eq!(box_a.pop().unwrap().unwrap().as_str(), "hi");
        let left = box_a.pop().unwrap().unwrap();
        assert!(left.as_str().contains(&c), "{left}");
        assert_eq!(box_b.pop().unwrap(), None);
        reg.leave(&a);
        // b knew a from its sample.
        assert!(box_b.pop().unwrap().unwrap().as_str().contains(&a));
        drop(box_c);
        reg.leave(&b);
    }

    #[test]
    fn a_queue_without_room_for_a_notice_drops_its_reader() {
        let total = 4 * (100 + crate::mailbox::ENTRY_OVERHEAD);
        let reg = registry(total, 1000.0);
        let (a, box_a, _) = reg.join(&swarm('c')).unwrap();
        let (b, box_b, _) = reg.join(&swarm('c')).unwrap();
        let big: String = "y".repeat(100);
        let mut delivered = 0;
        while reg.relay(&a, &b, big.clone().into()) == Relayed::Delivered {
            delivered += 1;
        }
        assert_eq!(delivered, 3);
        // b's reserve takes some notices, then b is dropped.
        let mut others = Vec::new();
        for _ in 0..40 {
            let (id, mb, _) = reg.join(&swarm('c')).unwrap();
            reg.leave(&id);
            others.push(mb);
            if box_b.is_closed() {
                break;
            }
        }
        assert!(box_b.is_closed(), "b was never dropped");
        assert_eq!(reg.counts().peers, 1);
        // a heard b leave.
        let mut heard = false;
        while let Ok(Some(m)) = box_a.pop() {
            heard |= m.as_str().contains(&b);
        }
        assert!(heard);
        assert_eq!(reg.relay(&a, &b, "z".into()), Relayed::UnknownPeer);
    }
}
