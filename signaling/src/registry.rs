//! This server's peers: who is in which swarm, who knows whom, and how to reach them.
//!
//! In memory mode this is every room there is. With Redis (`crate::cluster`) it is this
//! instance's share of them: its own clients, and which of them know which peer ids (of
//! any instance), so that departures announced by any instance reach those here who can act
//! on them.
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

use crate::locality::{self, Locality};
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

/// A fresh random peer id: 16 bytes from the thread RNG (ChaCha seeded by the OS).
pub(crate) fn new_peer_key() -> PeerKey {
    let mut bytes = [0u8; 16];
    rand::fill(&mut bytes);
    u128::from_be_bytes(bytes)
}

struct PeerEntry {
    swarm: Arc<str>,
    /// Index of this peer in its room's `members`.
    index: usize,
    mailbox: Arc<Mailbox>,
    /// Peer ids this peer knows (it is among their `watchers`).
    knows: HashSet<PeerKey>,
    /// Where it is, for the samples of newcomers.
    locality: Locality,
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
    /// For a peer id (of a peer here or, with Redis, anywhere), the peers here that know it:
    /// told when it leaves.
    watchers: HashMap<PeerKey, HashSet<PeerKey>>,
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
    /// With Redis: Redis did not answer, so the addressee could not be looked up.
    Unavailable,
}

/// A signal's addressee is not a peer here; the sender is, in `swarm`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NotHere {
    pub swarm: Arc<str>,
}

/// A peer of a room here, with its locality's tag (what Redis keeps of it).
pub(crate) type Member = (PeerKey, String);

/// A peer this registry removed: it left, or it was dropped as a slow reader.
pub(crate) type Removed = (PeerKey, Arc<str>);

/// The limits the registry applies.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub budget: Budget,
    pub max_rooms: usize,
    pub max_peers_per_room: usize,
    pub sample_size: usize,
    /// Places of each sample drawn from the whole room at random; the rest go to the
    /// closest peers.
    pub random_places: usize,
    pub room_notice_rate: f64,
    /// Peers a room needs for its welcomes to list any (0 or 1: always).
    pub p2p_min_peers: usize,
}

/// A peer admitted to a room: its id, its queue, its welcome's sample, and whether the
/// room is still below `p2p_min_peers` (then the sample is empty).
pub(crate) struct Admission {
    pub key: PeerKey,
    pub mailbox: Arc<Mailbox>,
    pub sample: Vec<PeerKey>,
    pub held: bool,
}

impl Limits {
    /// With Redis: how many of the room a join draws at random to pick its sample from
    /// (the closest of them first). The whole room when it is that small; beyond, the
    /// closest of a random draw rather than of the room, to keep a join one bounded
    /// round trip.
    pub(crate) fn candidates(&self) -> usize {
        if self.random_places >= self.sample_size {
            self.sample_size
        } else {
            (self.sample_size * 8).max(256).min(self.max_peers_per_room)
        }
    }
}

/// The room registry.
pub(crate) struct Registry {
    inner: Mutex<Inner>,
    limits: Limits,
    /// Bytes queued in all mailboxes.
    queued: Arc<AtomicUsize>,
}

fn too_many_rooms(max_rooms: usize) -> JoinRefused {
    JoinRefused(
        ErrorCode::TooManyRooms,
        format!("the server has its maximum of {max_rooms} rooms"),
    )
}

/// `room-full`, worded for any instance's limit (with Redis the room spans instances).
pub(crate) fn room_full(max_peers_per_room: usize) -> JoinRefused {
    JoinRefused(
        ErrorCode::RoomFull,
        format!("the room has its maximum of {max_peers_per_room} peers"),
    )
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

    pub(crate) fn limits(&self) -> &Limits {
        &self.limits
    }

    pub(crate) fn counts(&self) -> Counts {
        let g = self.lock();
        Counts {
            rooms: g.rooms.len(),
            peers: g.peers.len(),
        }
    }

    /// How many peers each room has.
    pub(crate) fn room_sizes(&self) -> Vec<usize> {
        self.lock()
            .rooms
            .values()
            .map(|r| r.members.len())
            .collect()
    }

    /// Bytes queued for all clients.
    pub(crate) fn queued_bytes(&self) -> usize {
        self.queued.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// In memory mode: adds a new peer at `at` to `swarm`'s room. Returns its id, its
    /// mailbox and a sample of at most `sample_size` of the peers that were already there,
    /// the closest first after `random_places` drawn at random.
    pub(crate) fn join(&self, swarm: &str, at: &Locality) -> Result<Admission, JoinRefused> {
        let lim = self.limits;
        let mut g = self.lock();
        let inner = &mut *g;
        match inner.rooms.get(swarm).map(|r| r.members.len()) {
            None if inner.rooms.len() >= lim.max_rooms => {
                return Err(too_many_rooms(lim.max_rooms));
            }
            Some(n) if n >= lim.max_peers_per_room => {
                return Err(room_full(lim.max_peers_per_room));
            }
            _ => {}
        }
        let mut key = new_peer_key();
        while inner.peers.contains_key(&key) {
            key = new_peer_key();
        }
        let size = inner.rooms.get(swarm).map_or(0, |r| r.members.len()) + 1;
        let held = size < lim.p2p_min_peers;
        let sample: Vec<PeerKey> = match inner.rooms.get(swarm) {
            Some(_) if held => Vec::new(),
            Some(room) => {
                let candidates: Vec<(PeerKey, &Locality)> = room
                    .members
                    .iter()
                    .filter_map(|k| inner.peers.get(k).map(|p| (*k, &p.locality)))
                    .collect();
                locality::sample(
                    at,
                    &candidates,
                    lim.sample_size,
                    lim.random_places,
                    &mut rand::rng(),
                )
            }
            None => Vec::new(),
        };
        let mailbox = self.insert(inner, swarm, key, &sample, at.clone());
        Ok(Admission {
            key,
            mailbox,
            sample,
            held,
        })
    }

    /// With Redis: whether a peer could join `swarm` here as far as this instance's own
    /// limit goes (`max_rooms` counts the rooms this instance has clients in).
    pub(crate) fn may_open(&self, swarm: &str) -> Result<(), JoinRefused> {
        let g = self.lock();
        if !g.rooms.contains_key(swarm) && g.rooms.len() >= self.limits.max_rooms {
            return Err(too_many_rooms(self.limits.max_rooms));
        }
        Ok(())
    }

    /// With Redis: adds `key` at `at`, which Redis admitted to `swarm` with the welcome
    /// `sample`.
    pub(crate) fn admit(
        &self,
        swarm: &str,
        key: PeerKey,
        sample: &[PeerKey],
        at: Locality,
    ) -> Arc<Mailbox> {
        let mut g = self.lock();
        self.insert(&mut g, swarm, key, sample, at)
    }

    fn insert(
        &self,
        inner: &mut Inner,
        swarm: &str,
        key: PeerKey,
        sample: &[PeerKey],
        locality: Locality,
    ) -> Arc<Mailbox> {
        let lim = &self.limits;
        let swarm: Arc<str> = match inner.rooms.get_key_value(swarm) {
            Some((k, _)) => k.clone(),
            None => Arc::from(swarm),
        };
        let room = inner.rooms.entry(swarm.clone()).or_insert_with(|| Room {
            members: Vec::new(),
            notices: NoticeBudget {
                tokens: lim.room_notice_rate * NOTICE_BURST_SECS,
                last: Instant::now(),
            },
        });
        let index = room.members.len();
        room.members.push(key);
        for s in sample {
            inner.watchers.entry(*s).or_default().insert(key);
        }
        let mailbox = Arc::new(Mailbox::new(lim.budget, self.queued.clone()));
        inner.peers.insert(
            key,
            PeerEntry {
                swarm,
                index,
                mailbox: mailbox.clone(),
                knows: sample.iter().copied().collect(),
                locality,
            },
        );
        mailbox
    }

    /// Removes `key` (if it is here) and tells those here who should know (see the module
    /// documentation). Peers whose queue has no room left even for that notice are removed
    /// too, as slow readers (their connection sees its mailbox closed and disconnects).
    /// Returns every peer removed.
    pub(crate) fn leave(&self, key: PeerKey) -> Vec<Removed> {
        let mut g = self.lock();
        cascade(&mut g, &self.limits, vec![key])
    }

    /// With Redis: a peer of another instance left `swarm` (or expired from it). Tells those
    /// here who knew it; returns the slow readers removed on the way.
    pub(crate) fn departed(&self, swarm: &str, key: PeerKey) -> Vec<Removed> {
        let mut g = self.lock();
        if g.peers.contains_key(&key) {
            // Ours: only its own leave announces it here.
            return Vec::new();
        }
        let Some((swarm, _)) = g.rooms.get_key_value(swarm) else {
            g.watchers.remove(&key);
            return Vec::new();
        };
        let swarm = swarm.clone();
        let mut pending = Vec::new();
        announce(&mut g, &self.limits, &swarm, key, &mut pending);
        cascade(&mut g, &self.limits, pending)
    }

    /// Delivers `text` (an already printed `signal`) from `from` to `to`, both now knowing
    /// each other. Nothing is delivered unless [`Relayed::Delivered`]. `Err` when the
    /// sender is here but the addressee is not: with Redis, it may be another instance's.
    pub(crate) fn relay(
        &self,
        from: PeerKey,
        to: PeerKey,
        text: Outbound,
    ) -> Result<Relayed, NotHere> {
        let mut g = self.lock();
        let Some(sender) = g.peers.get(&from) else {
            return Ok(Relayed::UnknownPeer);
        };
        if from == to {
            return Ok(Relayed::UnknownPeer);
        }
        let Some(target) = g.peers.get(&to) else {
            return Err(NotHere {
                swarm: sender.swarm.clone(),
            });
        };
        if sender.swarm != target.swarm {
            return Ok(Relayed::UnknownPeer);
        }
        if let Err(refused) = target.mailbox.push_signal(from, text) {
            return Ok(Relayed::Busy(refused));
        }
        know(&mut g, from, to);
        know(&mut g, to, from);
        Ok(Relayed::Delivered)
    }

    /// With Redis: delivers a signal from `from`, a peer of `swarm` on another instance, to
    /// `to`, a peer here.
    pub(crate) fn deliver(
        &self,
        from: PeerKey,
        to: PeerKey,
        swarm: &str,
        text: Outbound,
    ) -> Relayed {
        let mut g = self.lock();
        let Some(target) = g.peers.get(&to) else {
            return Relayed::UnknownPeer;
        };
        if from == to || &*target.swarm != swarm {
            return Relayed::UnknownPeer;
        }
        if let Err(refused) = target.mailbox.push_signal(from, text) {
            return Relayed::Busy(refused);
        }
        know(&mut g, to, from);
        Relayed::Delivered
    }

    /// With Redis: `who`, a peer here, sent a signal to `whom` on another instance.
    pub(crate) fn learned(&self, who: PeerKey, whom: PeerKey) {
        know(&mut self.lock(), who, whom);
    }

    /// Queues a server message for `to`; `false` if it is not here or has no room for it
    /// (a reader that slow is dropped by the next departure it cannot take).
    pub(crate) fn notify(&self, to: PeerKey, text: Outbound) -> bool {
        let g = self.lock();
        g.peers
            .get(&to)
            .is_some_and(|p| p.mailbox.push_notice(text))
    }

    /// Whether `key` is a peer here.
    pub(crate) fn contains(&self, key: PeerKey) -> bool {
        self.lock().peers.contains_key(&key)
    }

    /// Every room with peers here, and those peers with their locality tags.
    pub(crate) fn snapshot(&self) -> Vec<(Arc<str>, Vec<Member>)> {
        let g = self.lock();
        g.rooms
            .iter()
            .map(|(swarm, room)| {
                let members = room
                    .members
                    .iter()
                    .map(|k| {
                        let tag = g.peers.get(k).map(|p| p.locality.tag()).unwrap_or_default();
                        (*k, tag)
                    })
                    .collect();
                (swarm.clone(), members)
            })
            .collect()
    }
}

/// `who` (a peer here) now knows `whom`'s id.
fn know(inner: &mut Inner, who: PeerKey, whom: PeerKey) {
    if let Some(p) = inner.peers.get_mut(&who)
        && p.knows.insert(whom)
    {
        inner.watchers.entry(whom).or_default().insert(who);
    }
}

/// Removes each of `pending` and announces it, and so on for the slow readers that drops.
fn cascade(inner: &mut Inner, limits: &Limits, mut pending: Vec<PeerKey>) -> Vec<Removed> {
    let mut removed = Vec::new();
    while let Some(k) = pending.pop() {
        if let Some(swarm) = remove(inner, k) {
            announce(inner, limits, &swarm, k, &mut pending);
            removed.push((k, swarm));
        }
    }
    removed
}

/// Takes `key` out of the maps; its swarm if it was here.
fn remove(inner: &mut Inner, key: PeerKey) -> Option<Arc<str>> {
    let entry = inner.peers.remove(&key)?;
    for k in &entry.knows {
        if let Some(w) = inner.watchers.get_mut(k) {
            w.remove(&key);
            if w.is_empty() {
                inner.watchers.remove(k);
            }
        }
    }
    if let Some(room) = inner.rooms.get_mut(&entry.swarm) {
        room.members.swap_remove(entry.index);
        if let Some(moved) = room.members.get(entry.index)
            && let Some(p) = inner.peers.get_mut(moved)
        {
            p.index = entry.index;
        }
        if room.members.is_empty() {
            inner.rooms.remove(&entry.swarm);
        }
    }
    Some(entry.swarm)
}

/// Tells the peers here who should know that `key` left `swarm`; those without room for the
/// notice go to `pending`.
fn announce(
    inner: &mut Inner,
    limits: &Limits,
    swarm: &Arc<str>,
    key: PeerKey,
    pending: &mut Vec<PeerKey>,
) {
    let watchers = inner.watchers.remove(&key).unwrap_or_default();
    let Some(room) = inner.rooms.get_mut(swarm) else {
        return;
    };
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
        watchers.into_iter().collect()
    };
    for member in told {
        if let Some(p) = inner.peers.get_mut(&member) {
            p.knows.remove(&key);
            if !p.mailbox.push_notice(text.clone()) {
                tracing::debug!(peer = %peer_id_hex(member), "queue full; dropping slow reader");
                p.mailbox.close();
                pending.push(member);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Joins `swarm` from nowhere in particular: (id, queue, sample).
    fn joined(reg: &Registry, swarm: &str) -> (PeerKey, Arc<Mailbox>, Vec<PeerKey>) {
        let a = reg.join(swarm, &Locality::default()).expect("join");
        (a.key, a.mailbox, a.sample)
    }

    fn swarm(c: char) -> String {
        std::iter::repeat_n(c, 40).collect()
    }

    fn registry(total: usize, rate: f64) -> Registry {
        Registry::new(Limits {
            budget: Budget::new(total, total),
            max_rooms: 10,
            max_peers_per_room: 100,
            sample_size: 5,
            random_places: 5,
            p2p_min_peers: 0,
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
            let (id, mailbox, sample) = joined(&reg, &swarm('a'));
            assert!(sample.len() <= 5 && sample.len() <= ids.len());
            assert!(sample.iter().all(|s| ids.contains(s)));
            ids.push(id);
            boxes.push(mailbox);
        }
        // Remove from the middle, then relay to every remaining peer to check the index
        // bookkeeping stayed right.
        for id in ids.drain(3..10) {
            assert_eq!(reg.leave(id).len(), 1);
        }
        assert_eq!(reg.counts().peers, 23);
        for id in &ids[1..] {
            assert_eq!(reg.relay(ids[0], *id, "x".into()), Ok(Relayed::Delivered));
        }
        assert_eq!(
            reg.relay(ids[0], ids[0], "x".into()),
            Ok(Relayed::UnknownPeer)
        );
        for id in ids.clone() {
            reg.leave(id);
        }
        let c = reg.counts();
        assert_eq!((c.rooms, c.peers), (0, 0));
        assert!(reg.lock().watchers.is_empty(), "who-knows-whom left behind");
        drop(boxes);
        assert_eq!(reg.queued_bytes(), 0);
    }

    #[test]
    fn departures_go_to_those_who_know_once_the_budget_is_spent() {
        // No broadcast budget at all: only targeted notices.
        let reg = registry(1 << 20, 0.0);
        let (a, box_a, _) = joined(&reg, &swarm('b'));
        let (b, box_b, sample) = joined(&reg, &swarm('b'));
        assert_eq!(sample, vec![a]);
        let (c, box_c, _) = joined(&reg, &swarm('b'));
        // b knows a (sample); a learns c from c's signal.
        assert_eq!(reg.relay(c, a, "hi".into()), Ok(Relayed::Delivered));
        reg.leave(c);
        // a heard c leave (they talked); b did not (it never heard of c) — except that c's
        // sample held b, which c knew, not the reverse.
        assert_eq!(box_a.pop().unwrap().unwrap().as_str(), "hi");
        let left = box_a.pop().unwrap().unwrap();
        assert!(left.as_str().contains(&peer_id_hex(c)), "{left}");
        assert_eq!(box_b.pop().unwrap(), None);
        reg.leave(a);
        // b knew a from its sample.
        assert!(
            box_b
                .pop()
                .unwrap()
                .unwrap()
                .as_str()
                .contains(&peer_id_hex(a))
        );
        drop(box_c);
        reg.leave(b);
    }

    #[test]
    fn peers_elsewhere_are_known_and_announced_like_local_ones() {
        let reg = registry(1 << 20, 0.0);
        let (remote_x, remote_y) = (new_peer_key(), new_peer_key());
        // a was welcomed with x in its sample; b learns y from y's signal.
        let box_a = reg.admit(
            &swarm('d'),
            new_peer_key(),
            &[remote_x],
            Locality::default(),
        );
        let b = new_peer_key();
        let box_b = reg.admit(&swarm('d'), b, &[], Locality::default());
        assert!(matches!(
            reg.relay(b, remote_y, "?".into()),
            Err(NotHere { .. })
        ));
        assert_eq!(
            reg.deliver(remote_y, b, &swarm('d'), "sdp".into()),
            Relayed::Delivered
        );
        assert_eq!(
            reg.deliver(remote_y, b, &swarm('e'), "sdp".into()),
            Relayed::UnknownPeer
        );
        assert_eq!(box_b.pop().unwrap().unwrap().as_str(), "sdp");
        // Each departure reaches the one that knew the peer, and only it.
        for (gone, told, not_told) in [(remote_x, &box_a, &box_b), (remote_y, &box_b, &box_a)] {
            reg.departed(&swarm('d'), gone);
            let notice = told.pop().unwrap().expect("a peer-left");
            assert!(notice.as_str().contains(&peer_id_hex(gone)), "{notice}");
            assert_eq!(not_told.pop().unwrap(), None);
        }
        // A departure announced for one of ours is its own leave's business.
        reg.departed(&swarm('d'), b);
        assert_eq!(box_a.pop().unwrap(), None);
        assert!(reg.contains(b));
    }

    #[test]
    fn a_queue_without_room_for_a_notice_drops_its_reader() {
        let total = 4 * (100 + crate::mailbox::ENTRY_OVERHEAD);
        let reg = registry(total, 1000.0);
        let (a, box_a, _) = joined(&reg, &swarm('c'));
        let (b, box_b, _) = joined(&reg, &swarm('c'));
        let big: String = "y".repeat(100);
        let mut delivered = 0;
        while reg.relay(a, b, big.clone().into()) == Ok(Relayed::Delivered) {
            delivered += 1;
        }
        assert_eq!(delivered, 3);
        // b's reserve takes some notices, then b is dropped.
        let mut others = Vec::new();
        let mut removed = Vec::new();
        for _ in 0..40 {
            let (id, mb, _) = joined(&reg, &swarm('c'));
            removed.extend(reg.leave(id).into_iter().map(|(k, _)| k));
            others.push(mb);
            if box_b.is_closed() {
                break;
            }
        }
        assert!(box_b.is_closed(), "b was never dropped");
        assert!(
            removed.contains(&b),
            "the slow reader is not among the removed"
        );
        assert_eq!(reg.counts().peers, 1);
        // a heard b leave.
        let mut heard = false;
        while let Ok(Some(m)) = box_a.pop() {
            heard |= m.as_str().contains(&peer_id_hex(b));
        }
        assert!(heard);
        assert_eq!(
            reg.relay(a, b, "z".into()),
            Err(NotHere {
                swarm: Arc::from(swarm('c'))
            })
        );
    }
}
