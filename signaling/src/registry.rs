//! Rooms and peers: who is in which swarm, and how to reach them.
//!
//! One mutex guards the whole registry; every operation under it is short (a hash look-up,
//! a sample of at most `sample_size` ids, or one `try_send` per room member), and nothing
//! awaits while holding it.

use std::collections::HashMap;
use std::sync::Mutex;

use axum::extract::ws::Utf8Bytes;
use tokio::sync::mpsc;

use crate::protocol::{ErrorCode, ServerMessage};

/// What the registry hands to a connection's queue.
pub(crate) type Outbound = Utf8Bytes;

struct PeerEntry {
    swarm: String,
    /// Index of this peer in its room's `members`.
    index: usize,
    tx: mpsc::Sender<Outbound>,
}

#[derive(Default)]
struct Room {
    members: Vec<String>,
}

#[derive(Default)]
struct Inner {
    rooms: HashMap<String, Room>,
    peers: HashMap<String, PeerEntry>,
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

/// The room registry.
#[derive(Default)]
pub(crate) struct Registry {
    inner: Mutex<Inner>,
}

/// A fresh random peer id: 16 bytes from the thread RNG (ChaCha seeded by the OS), in hex.
fn new_peer_id() -> String {
    let mut bytes = [0u8; 16];
    rand::fill(&mut bytes);
    let mut s = String::with_capacity(32);
    for b in bytes {
        s.push(char::from_digit(u32::from(b >> 4), 16).unwrap_or('0'));
        s.push(char::from_digit(u32::from(b & 15), 16).unwrap_or('0'));
    }
    s
}

impl Registry {
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

    /// Adds a new peer to `swarm`'s room. Returns its id and a random sample of at most
    /// `sample_size` of the peers that were already there.
    pub(crate) fn join(
        &self,
        swarm: &str,
        tx: mpsc::Sender<Outbound>,
        max_rooms: usize,
        max_peers_per_room: usize,
        sample_size: usize,
    ) -> Result<(String, Vec<String>), JoinRefused> {
        let mut g = self.lock();
        let inner = &mut *g;
        let room_len = inner.rooms.get(swarm).map(|r| r.members.len());
        match room_len {
            None if inner.rooms.len() >= max_rooms => {
                return Err(JoinRefused(
                    ErrorCode::TooManyRooms,
                    format!("the server has its maximum of {max_rooms} rooms"),
                ));
            }
            Some(n) if n >= max_peers_per_room => {
                return Err(JoinRefused(
                    ErrorCode::RoomFull,
                    format!("the room has its maximum of {max_peers_per_room} peers"),
                ));
            }
            _ => {}
        }
        let mut id = new_peer_id();
        while inner.peers.contains_key(&id) {
            id = new_peer_id();
        }
        let room = inner.rooms.entry(swarm.to_owned()).or_default();
        let n = room.members.len();
        let amount = sample_size.min(n);
        let mut rng = rand::rng();
        let sample: Vec<String> = rand::seq::index::sample(&mut rng, n, amount)
            .into_iter()
            .map(|i| room.members[i].clone())
            .collect();
        room.members.push(id.clone());
        inner.peers.insert(
            id.clone(),
            PeerEntry {
                swarm: swarm.to_owned(),
                index: n,
                tx,
            },
        );
        Ok((id, sample))
    }

    /// Removes `peer_id` (if still present) and tells the rest of its room. Peers whose
    /// queue is full while being told are removed too, as slow readers (their connection
    /// sees its queue close and disconnects).
    pub(crate) fn leave(&self, peer_id: &str) {
        let mut g = self.lock();
        let mut pending = vec![peer_id.to_owned()];
        while let Some(id) = pending.pop() {
            remove_and_announce(&mut g, &id, &mut pending);
        }
    }

    /// Delivers `text` (an already printed `signal`) from `from` to `to`. Fails with
    /// `false` when `to` is not a peer in `from`'s room. An addressee whose queue is full is
    /// disconnected as a slow reader (its room, the sender included, hears `peer-left`);
    /// that still counts as found.
    pub(crate) fn relay(&self, from: &str, to: &str, text: Outbound) -> bool {
        let mut g = self.lock();
        let Some(sender) = g.peers.get(from) else {
            return false;
        };
        let Some(target) = g.peers.get(to) else {
            return false;
        };
        if from == to || sender.swarm != target.swarm {
            return false;
        }
        match target.tx.try_send(text) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Closed(_)) => false,
            Err(mpsc::error::TrySendError::Full(_)) => {
                tracing::info!(peer = to, "outbound queue full; disconnecting slow reader");
                let mut pending = vec![to.to_owned()];
                while let Some(id) = pending.pop() {
                    remove_and_announce(&mut g, &id, &mut pending);
                }
                true
            }
        }
    }
}

fn remove_and_announce(inner: &mut Inner, peer_id: &str, pending: &mut Vec<String>) {
    let Some(entry) = inner.peers.remove(peer_id) else {
        return;
    };
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
        peer_id: peer_id.to_owned(),
    }
    .to_json()
    .into();
    for member in &room.members {
        if let Some(p) = inner.peers.get(member)
            && let Err(mpsc::error::TrySendError::Full(_)) = p.tx.try_send(text.clone())
        {
            tracing::info!(peer = %member, "outbound queue full; disconnecting slow reader");
            pending.push(member.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn swarm(c: char) -> String {
        std::iter::repeat_n(c, 40).collect()
    }

    #[test]
    fn join_sample_leave_keeps_indices_consistent() {
        let reg = Registry::default();
        let mut rxs = Vec::new();
        let mut ids = Vec::new();
        for _ in 0..30 {
            let (tx, rx) = mpsc::channel(64);
            let (id, sample) = reg.join(&swarm('a'), tx, 10, 100, 5).unwrap();
            assert_eq!(id.len(), 32);
            assert!(sample.len() <= 5 && sample.len() <= ids.len());
            assert!(sample.iter().all(|s| ids.contains(s)));
            ids.push(id);
            rxs.push(rx);
        }
        // Remove from the middle, then relay to every remaining peer to check the index
        // bookkeeping stayed right.
        for id in ids.drain(3..10) {
            reg.leave(&id);
        }
        assert_eq!(reg.counts().peers, 23);
        for id in &ids[1..] {
            assert!(reg.relay(&ids[0], id, "x".into()));
        }
        assert!(!reg.relay(&ids[0], &ids[0], "x".into()));
        for id in ids.clone() {
            reg.leave(&id);
        }
        let c = reg.counts();
        assert_eq!((c.rooms, c.peers), (0, 0));
    }

    #[test]
    fn full_queue_disconnects_the_slow_reader() {
        let reg = Registry::default();
        let (tx_a, mut rx_a) = mpsc::channel(8);
        let (a, _) = reg.join(&swarm('b'), tx_a, 10, 100, 5).unwrap();
        let (tx_b, rx_b) = mpsc::channel(1);
        let (b, _) = reg.join(&swarm('b'), tx_b, 10, 100, 5).unwrap();
        assert!(reg.relay(&a, &b, "1".into()));
        // b's queue (1) is full now: the next relay drops b and tells a.
        assert!(reg.relay(&a, &b, "2".into()));
        assert_eq!(reg.counts().peers, 1);
        let left = rx_a.try_recv().unwrap();
        assert!(left.as_str().contains("peer-left") && left.as_str().contains(&b));
        drop(rx_b);
        assert!(!reg.relay(&a, &b, "3".into()));
    }
}
