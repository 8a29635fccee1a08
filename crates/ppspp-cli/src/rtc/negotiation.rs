//! What the signaling server brings: offers to answer, answers and candidates for our
//! connections, peers leaving, errors. Apart because all of it is untrusted input that
//! only ever creates, completes or gives up connections.

use super::config::data_batch_of;
use super::selected_pair::RemoteCandidate;
use super::{RtcTransport, peer_conn};
use ppspp_signal_protocol::{ErrorCode, ServerMessage};
use serde_json::Value;
use std::time::Instant;

impl RtcTransport {
    pub(super) fn handle_signal(&mut self, msg: ServerMessage) {
        match msg {
            ServerMessage::Signal { from, data } => {
                let kind = data.get("kind").and_then(Value::as_str).unwrap_or("");
                let sdp = data.get("sdp").and_then(Value::as_str).unwrap_or("");
                match kind {
                    "offer" => self.on_offer(&from, sdp, data_batch_of(&data)),
                    "answer" => self.on_answer(&from, sdp, data_batch_of(&data)),
                    "candidate" => self.on_candidate(&from, &data),
                    // Untrusted input: ignore what we do not understand.
                    _ => {}
                }
            }
            ServerMessage::PeerLeft { peer_id } => {
                // An open connection may outlive its signaling session; one still being set
                // up cannot complete.
                if let Some(&id) = self.by_remote.get(&peer_id)
                    && self.conns.get(&id).is_some_and(|c| !c.open)
                {
                    self.close(id);
                }
            }
            ServerMessage::Error {
                code, message, to, ..
            } => match code {
                // The peer is gone (or never was: a sample may still list the peers of a
                // signaling instance that died): give up the attempt now, not at its
                // timeout. Routine, so not reported.
                ErrorCode::UnknownPeer => {
                    if let Some(&id) = to.as_ref().and_then(|p| self.by_remote.get(p))
                        && self.conns.get(&id).is_some_and(|c| !c.open)
                    {
                        self.close(id);
                    }
                }
                // Its queue is full: the attempt times out, or its answer comes late.
                ErrorCode::PeerBusy => {}
                _ => eprintln!("signaling: {code}: {message}"),
            },
            // Only ever the reply to our `join`, which `SignalClient::join` consumed.
            ServerMessage::Welcome { .. } => {}
            // Only ever the reply to an `ice`, which this client does not send.
            ServerMessage::IceServers { .. } => {}
        }
    }

    fn on_offer(&mut self, from: &str, sdp: &str, data_batch: usize) {
        if self.by_remote.contains_key(from) {
            return; // no renegotiation
        }
        if self.conns.len() >= self.config.max_conns {
            return; // the offerer gives up in time and tries others
        }
        let now = Instant::now();
        // Untrusted input: an offer we cannot answer is ignored.
        let Ok((pc, answer)) =
            peer_conn::answer(self.config.stack, now, &self.local_candidates(), sdp)
        else {
            return;
        };
        let id = self.insert(from, pc, false, now);
        if let Some(c) = self.conns.get_mut(&id) {
            RemoteCandidate::add_all(&mut c.remote_candidates, sdp);
            c.remote_data_batch = data_batch;
        }
        let answer = self.about_us("answer", &answer);
        self.sig_out.push((from.to_string(), answer));
        self.drain(id);
    }

    fn on_answer(&mut self, from: &str, sdp: &str, data_batch: usize) {
        let Some(&id) = self.by_remote.get(from) else {
            return;
        };
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        if conn.pc.accept_answer(sdp).is_err() {
            conn.dead = true;
        }
        conn.remote_data_batch = data_batch;
        RemoteCandidate::add_all(&mut conn.remote_candidates, sdp);
        self.drain(id);
    }

    fn on_candidate(&mut self, from: &str, data: &Value) {
        let Some(&id) = self.by_remote.get(from) else {
            return;
        };
        let text = data
            .get("candidate")
            .and_then(|c| c.get("candidate").or(Some(c)))
            .and_then(Value::as_str)
            .unwrap_or("");
        if let Some(conn) = self.conns.get_mut(&id) {
            conn.pc.add_remote_candidate(text);
            RemoteCandidate::add_all(&mut conn.remote_candidates, text);
        }
        self.drain(id);
    }
}
