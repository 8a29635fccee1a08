//! Joining the signaling servers again when the connection drops: at the next of the
//! site's URLs, after a back-off (`rejoin`'s policy), in a task, then offering to the new
//! sample. Apart because it is the one part of the transport that outlives a signaling
//! connection.

use super::{RtcTransport, rejoin};
use crate::signal::{JoinAnyError, SignalClient};

/// After joining again, offers go to at most this many of the new sample's peers.
const REJOIN_OFFERS: usize = 8;

/// Where to join again when the signaling connection drops.
pub(super) struct Failover {
    /// The signaling URLs (instances of one site's signaling), and which is in use.
    pub(super) urls: Vec<String>,
    pub(super) index: usize,
    pub(super) room: String,
    /// Failed attempts since the last welcome.
    pub(super) attempts: u32,
    /// The attempt under way (it waits out its back-off first).
    pub(super) task: Option<tokio::task::JoinHandle<Result<(SignalClient, usize), JoinAnyError>>>,
}

impl Failover {
    /// Joined `room` at `url`, with no other URL to go to yet.
    pub(super) fn new(url: String, room: &str) -> Failover {
        Failover {
            urls: vec![url],
            index: 0,
            room: room.to_owned(),
            attempts: 0,
            task: None,
        }
    }
}

impl RtcTransport {
    /// Joins again at these URLs, going round from the one after `joined` (the index of
    /// the URL joined now), when the signaling connection drops.
    pub fn fail_over_to(&mut self, urls: Vec<String>, joined: usize) {
        if !urls.is_empty() {
            self.failover.index = joined % urls.len();
            self.failover.urls = urls;
        }
    }

    /// Starts an attempt to join again, at the next URL, after a back-off that grows with
    /// each round through the URLs.
    fn start_rejoin(&mut self) {
        let f = &mut self.failover;
        let delay = rejoin::rejoin_delay(f.attempts, f.urls.len(), rand::random::<f64>());
        f.attempts = f.attempts.saturating_add(1);
        let (urls, first, room) = (f.urls.clone(), (f.index + 1) % f.urls.len(), f.room.clone());
        f.task = Some(tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            crate::signal::join_first(&urls, first, &room).await
        }));
    }

    /// The signaling server went away: open connections go on, pending ones cannot
    /// complete. New peers meet us once we have joined again.
    pub(super) fn on_signal_closed(&mut self) {
        let url = self.signal.take().map(|s| s.url).unwrap_or_default();
        eprintln!("signaling server {url} closed the connection; joining again");
        self.start_rejoin();
    }

    /// An attempt to join again ended: offer to the new sample, or try the next URL.
    pub(super) fn on_rejoined(&mut self, result: Result<(SignalClient, usize), JoinAnyError>) {
        self.failover.task = None;
        match result {
            Ok((client, index)) => {
                eprintln!(
                    "signaling: joined again at {} as peer {}",
                    client.url, client.peer_id
                );
                self.failover.index = index;
                self.failover.attempts = 0;
                let peers: Vec<String> = client
                    .peers
                    .iter()
                    .filter(|p| !self.by_remote.contains_key(*p))
                    .take(REJOIN_OFFERS)
                    .cloned()
                    .collect();
                self.signal = Some(client);
                for p in peers {
                    if let Err(e) = self.offer(&p) {
                        eprintln!("webrtc: cannot offer to {p}: {e}");
                    }
                }
            }
            Err(e) => {
                eprintln!("signaling: cannot join again: {e}");
                self.start_rejoin();
            }
        }
    }
}
