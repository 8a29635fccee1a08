//! Our server-reflexive and relayed candidates: starting the STUN/TURN clients, waiting
//! for their first answers, and handing what they learn to every connection (trickled to
//! its remote) and what TURN relays to the connection it is for. Apart because str0m
//! leaves gathering to the application.

use super::RtcTransport;
use super::peer_conn::{CandidateKind, LocalCandidate};
use crate::gather::{Gatherer, Learnt};
use ppspp_signal_protocol::IceServer;
use serde_json::json;
use std::time::{Duration, Instant};

impl RtcTransport {
    /// Starts learning our server-reflexive address from each STUN server and a relayed one
    /// from each TURN server of `servers` (the welcome's, or the command line's).
    pub fn gather(&mut self, servers: &[IceServer]) {
        let mut gatherer = Gatherer::start(self.local, servers, Instant::now());
        self.gatherer_timeout = gatherer.poll_timeout();
        self.gatherer = Some(gatherer);
    }

    /// Runs the STUN/TURN exchanges until every server has answered or `max` has passed,
    /// so that the first offers and answers carry the candidates (later ones are trickled).
    pub async fn settle_gathering(&mut self, max: Duration) {
        let until = Instant::now() + max;
        while self.gatherer.as_ref().is_some_and(|g| !g.settled()) && Instant::now() < until {
            self.flush().await;
            let wake = self.poll_timeout().map_or(until, |t| t.min(until));
            match tokio::time::timeout_at(wake.into(), self.recv()).await {
                Ok(incoming) => self.handle(incoming),
                Err(_) => self.handle_timeout(Instant::now()),
            }
        }
        self.flush().await;
    }

    /// Starts gathering from `servers` (see [`gather`](Self::gather)), waits up to 3 s for
    /// their answers, and says on stderr what was learnt and what went wrong.
    pub async fn gather_and_report(&mut self, servers: &[IceServer]) {
        if servers.is_empty() {
            return;
        }
        self.gather(servers);
        self.settle_gathering(Duration::from_secs(3)).await;
        for p in self
            .gatherer
            .as_ref()
            .map(|g| g.problems.clone())
            .unwrap_or_default()
        {
            eprintln!("ice: {p}");
        }
        for c in &self.learnt {
            eprintln!("ice: {}", c.sdp_line());
        }
    }

    /// The candidates a new connection offers: ours, and those learnt so far (with
    /// `relay_only`, only relayed ones were kept).
    pub(super) fn local_candidates(&self) -> Vec<LocalCandidate> {
        let host = LocalCandidate {
            kind: CandidateKind::Host,
            addr: self.local,
            base: self.local,
        };
        (!self.config.relay_only)
            .then_some(host)
            .into_iter()
            .chain(self.learnt.iter().copied())
            .collect()
    }

    /// What the STUN/TURN servers sent: new candidates go to every connection (and to its
    /// remote, trickled), relayed data to the connection it is for.
    pub(super) fn after_gatherer(&mut self, now: Instant) {
        let Some(g) = self.gatherer.as_mut() else {
            return;
        };
        self.gatherer_timeout = g.poll_timeout();
        let mut fresh = Vec::new();
        while let Some(l) = g.poll_learnt() {
            let (kind, addr) = match l {
                Learnt::ServerReflexive(a) => (CandidateKind::ServerReflexive, a),
                Learnt::Relayed(a) => (CandidateKind::Relayed, a),
            };
            fresh.push(LocalCandidate {
                kind,
                addr,
                base: self.local,
            });
        }
        let mut relayed = Vec::new();
        while let Some(r) = g.poll_relayed() {
            relayed.push(r);
        }
        for c in fresh {
            // Once each; and a server-reflexive address that is our own (no NAT) adds nothing.
            let own = c.kind == CandidateKind::ServerReflexive && c.addr == self.local;
            let known = self.learnt.contains(&c);
            if own || known || (self.config.relay_only && c.kind != CandidateKind::Relayed) {
                continue;
            }
            self.learnt.push(c);
            let ids: Vec<u64> = self.conns.keys().copied().collect();
            for id in ids {
                let Some(conn) = self.conns.get_mut(&id) else {
                    continue;
                };
                if let Some(line) = conn.pc.add_local_candidate(&c) {
                    self.sig_out.push((
                        conn.remote.clone(),
                        json!({"kind": "candidate", "candidate": {"candidate": line, "sdpMid": null, "sdpMLineIndex": 0}}),
                    ));
                }
                self.drain(id);
            }
        }
        for r in relayed {
            self.receive(now, r.peer, r.relay, &r.data);
        }
    }
}
