//! Where rooms live: in this process's memory (the default), or in Redis, shared by every
//! instance serving the site (`crate::cluster`). Connections see one interface.

use std::sync::Arc;

use crate::cluster::Cluster;
use crate::locality::Locality;
use crate::mailbox::Mailbox;
use crate::registry::{
    Counts, JoinRefused, Outbound, Registry, Relayed, parse_peer_id, peer_id_hex,
};

/// A joined peer: its id, its queue, the ids of the welcome sample, and whether the room is
/// below the peer count P2P starts at.
pub(crate) struct Joined {
    pub peer_id: String,
    pub mailbox: Arc<Mailbox>,
    pub sample: Vec<String>,
    pub held: bool,
}

pub(crate) enum Rooms {
    Memory(Registry),
    Redis(Cluster),
}

impl Rooms {
    fn registry(&self) -> &Registry {
        match self {
            Rooms::Memory(r) => r,
            Rooms::Redis(c) => c.registry(),
        }
    }

    /// Adds a new peer to `swarm`'s room.
    pub(crate) async fn join(&self, swarm: &str, at: &Locality) -> Result<Joined, JoinRefused> {
        let a = match self {
            Rooms::Memory(r) => r.join(swarm, at)?,
            Rooms::Redis(c) => c.join(swarm, at).await?,
        };
        Ok(Joined {
            peer_id: peer_id_hex(a.key),
            mailbox: a.mailbox,
            sample: a.sample.into_iter().map(peer_id_hex).collect(),
            held: a.held,
        })
    }

    /// Delivers `text` (an already printed `signal`) from `from` to `to`.
    pub(crate) async fn relay(&self, from: &str, to: &str, text: Outbound) -> Relayed {
        let (Some(from), Some(to)) = (parse_peer_id(from), parse_peer_id(to)) else {
            return Relayed::UnknownPeer;
        };
        match self {
            Rooms::Memory(r) => r.relay(from, to, text).unwrap_or(Relayed::UnknownPeer),
            Rooms::Redis(c) => c.relay(from, to, text).await,
        }
    }

    /// Removes `peer_id` (if still present) and tells those who should know.
    pub(crate) async fn leave(&self, peer_id: &str) {
        let Some(key) = parse_peer_id(peer_id) else {
            return;
        };
        match self {
            Rooms::Memory(r) => {
                r.leave(key);
            }
            Rooms::Redis(c) => c.leave(key).await,
        }
    }

    /// Rooms and peers of this process.
    pub(crate) fn counts(&self) -> Counts {
        self.registry().counts()
    }

    /// How many peers of this process each of its rooms has.
    pub(crate) fn room_sizes(&self) -> Vec<usize> {
        self.registry().room_sizes()
    }

    /// Bytes queued for this process's clients.
    pub(crate) fn queued_bytes(&self) -> usize {
        self.registry().queued_bytes()
    }

    /// For `/health`: the backend's name, and whether it answers.
    pub(crate) fn backend(&self) -> (&'static str, bool) {
        match self {
            Rooms::Memory(_) => ("memory", true),
            Rooms::Redis(c) => ("redis", c.is_up()),
        }
    }
}
