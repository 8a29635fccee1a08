//! A peer connection on webrtc-rs's sans-IO `rtc` crate.
//!
//! Unlike str0m it cannot tell whether a datagram is its own, so the connection answers
//! that itself: STUN binding requests name our ICE username fragment, and everything else
//! comes from an address we have exchanged packets with.

use super::error::RtcError;
use super::peer_conn::{LABEL, LocalCandidate, Output, PeerConn};
use bytes::BytesMut;
use rtc::data_channel::{RTCDataChannelId, RTCDataChannelInit};
use rtc::peer_connection::event::{RTCDataChannelEvent, RTCPeerConnectionEvent};
use rtc::peer_connection::message::RTCMessage;
use rtc::peer_connection::sdp::RTCSessionDescription;
use rtc::peer_connection::state::RTCPeerConnectionState;
use rtc::peer_connection::transport::RTCIceCandidateInit;
use rtc::peer_connection::{RTCPeerConnection, RTCPeerConnectionBuilder};
use rtc::sansio::Protocol;
use rtc::shared::{TaggedBytesMut, TransportContext, TransportProtocol};
use std::collections::{HashSet, VecDeque};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

pub struct WebrtcRsConn {
    pc: RTCPeerConnection,
    channel: Option<RTCDataChannelId>,
    /// Our ICE username fragment: STUN requests for this connection start with it.
    ufrag: String,
    /// (our address, theirs) pairs packets went over, either way.
    paths: HashSet<(SocketAddr, SocketAddr)>,
    candidates: Vec<LocalCandidate>,
    outputs: VecDeque<Output>,
    closed: bool,
}

fn ufrag_of(sdp: &str) -> Option<String> {
    sdp.lines()
        .find_map(|l| l.trim().strip_prefix("a=ice-ufrag:"))
        .map(str::to_string)
}

/// The USERNAME of a STUN binding request, if `data` is one.
fn stun_request_username(data: &[u8]) -> Option<&[u8]> {
    const MAGIC: [u8; 4] = [0x21, 0x12, 0xA4, 0x42];
    if data.len() < 20 || data[0..2] != [0x00, 0x01] || data[4..8] != MAGIC {
        return None;
    }
    let mut at = 20;
    while at + 4 <= data.len() {
        let kind = u16::from_be_bytes([data[at], data[at + 1]]);
        let len = u16::from_be_bytes([data[at + 2], data[at + 3]]) as usize;
        let value = data.get(at + 4..at + 4 + len)?;
        if kind == 0x0006 {
            return Some(value);
        }
        at += 4 + len.div_ceil(4) * 4;
    }
    None
}

impl WebrtcRsConn {
    fn new(now: Instant, candidates: &[LocalCandidate]) -> Result<WebrtcRsConn, RtcError> {
        let pc = RTCPeerConnectionBuilder::new()
            .build(now)
            .map_err(|e| RtcError::Setup {
                step: "make a peer connection",
                reason: e.to_string(),
            })?;
        let mut conn = WebrtcRsConn {
            pc,
            channel: None,
            ufrag: String::new(),
            paths: HashSet::new(),
            candidates: Vec::new(),
            outputs: VecDeque::new(),
            closed: false,
        };
        for c in candidates {
            conn.add(c)?;
        }
        Ok(conn)
    }

    fn add(&mut self, c: &LocalCandidate) -> Result<String, RtcError> {
        let line = c.sdp_line();
        self.pc
            .add_local_candidate(RTCIceCandidateInit {
                candidate: line.clone(),
                ..Default::default()
            })
            .map_err(|e| RtcError::BadCandidate {
                candidate: *c,
                reason: e.to_string(),
            })?;
        self.candidates.push(*c);
        Ok(line)
    }

    fn set_local(&mut self, now: Instant, desc: RTCSessionDescription) -> Result<String, RtcError> {
        let sdp = desc.sdp.clone();
        self.ufrag = ufrag_of(&sdp).ok_or(RtcError::NoIceUfrag)?;
        self.pc
            .set_local_description(now, desc)
            .map_err(|e| RtcError::Setup {
                step: "set the local description",
                reason: e.to_string(),
            })?;
        Ok(sdp)
    }

    pub fn offer(
        now: Instant,
        candidates: &[LocalCandidate],
    ) -> Result<(Box<dyn PeerConn>, String), RtcError> {
        let mut conn = WebrtcRsConn::new(now, candidates)?;
        conn.pc
            .create_data_channel(
                LABEL,
                Some(RTCDataChannelInit {
                    ordered: false,
                    max_retransmits: Some(0),
                    ..Default::default()
                }),
            )
            .map_err(|e| RtcError::Setup {
                step: "make the data channel",
                reason: e.to_string(),
            })?;
        let offer = conn.pc.create_offer(None).map_err(|e| RtcError::Setup {
            step: "make an offer",
            reason: e.to_string(),
        })?;
        let sdp = conn.set_local(now, offer)?;
        Ok((Box::new(conn), sdp))
    }

    pub fn answer(
        now: Instant,
        candidates: &[LocalCandidate],
        offer: &str,
    ) -> Result<(Box<dyn PeerConn>, String), RtcError> {
        let mut conn = WebrtcRsConn::new(now, candidates)?;
        let offer = RTCSessionDescription::offer(offer.to_string())
            .map_err(|e| RtcError::BadOffer(e.to_string()))?;
        conn.pc
            .set_remote_description(now, offer)
            .map_err(|e| RtcError::CannotTakeOffer(e.to_string()))?;
        let answer = conn
            .pc
            .create_answer(None)
            .map_err(|e| RtcError::CannotAnswer(e.to_string()))?;
        let sdp = conn.set_local(now, answer)?;
        Ok((Box::new(conn), sdp))
    }

    /// Moves what the peer connection has for us into `outputs`.
    fn collect(&mut self) {
        while let Some(msg) = self.pc.poll_write() {
            let (source, destination) = (msg.transport.local_addr, msg.transport.peer_addr);
            self.paths.insert((source, destination));
            self.outputs.push_back(Output::Transmit {
                source,
                destination,
                data: msg.message.to_vec(),
            });
        }
        while let Some(event) = self.pc.poll_event() {
            match event {
                RTCPeerConnectionEvent::OnDataChannel(RTCDataChannelEvent::OnOpen(id))
                    if self.channel.is_none() =>
                {
                    self.channel = Some(id);
                    self.outputs.push_back(Output::Open);
                }
                RTCPeerConnectionEvent::OnDataChannel(RTCDataChannelEvent::OnClose(id))
                    if Some(id) == self.channel =>
                {
                    self.closed = true;
                }
                RTCPeerConnectionEvent::OnConnectionStateChangeEvent(
                    RTCPeerConnectionState::Failed
                    | RTCPeerConnectionState::Disconnected
                    | RTCPeerConnectionState::Closed,
                ) => self.closed = true,
                _ => {}
            }
        }
        while let Some(msg) = self.pc.poll_read() {
            if let RTCMessage::DataChannelMessage(id, m) = msg.message
                && Some(id) == self.channel
            {
                self.outputs.push_back(Output::Data(m.data.to_vec()));
            }
        }
    }
}

impl PeerConn for WebrtcRsConn {
    fn accept_answer(&mut self, sdp: &str) -> Result<(), RtcError> {
        let answer = RTCSessionDescription::answer(sdp.to_string())
            .map_err(|e| RtcError::BadAnswer(e.to_string()))?;
        self.pc
            .set_remote_description(Instant::now(), answer)
            .map_err(|e| RtcError::CannotAcceptAnswer(e.to_string()))
    }

    fn add_remote_candidate(&mut self, line: &str) {
        let _ = self.pc.add_remote_candidate(RTCIceCandidateInit {
            candidate: line.to_string(),
            ..Default::default()
        });
    }

    fn add_local_candidate(&mut self, c: &LocalCandidate) -> Option<String> {
        if self.candidates.contains(c) {
            return None;
        }
        self.add(c).ok()
    }

    fn accepts(&self, from: SocketAddr, to: SocketAddr, data: &[u8]) -> bool {
        if self.paths.contains(&(to, from)) {
            return true;
        }
        let Some(user) = stun_request_username(data) else {
            return false;
        };
        // "OURS:THEIRS" in a request to us.
        user.split(|&b| b == b':').next() == Some(self.ufrag.as_bytes())
    }

    fn receive(
        &mut self,
        now: Instant,
        from: SocketAddr,
        to: SocketAddr,
        data: &[u8],
    ) -> Result<(), RtcError> {
        self.paths.insert((to, from));
        self.pc
            .handle_read(TaggedBytesMut {
                now,
                transport: TransportContext {
                    local_addr: to,
                    peer_addr: from,
                    ecn: None,
                    transport_protocol: TransportProtocol::UDP,
                },
                message: BytesMut::from(data),
            })
            .map_err(|e| RtcError::Stack(e.to_string()))
    }

    fn handle_timeout(&mut self, now: Instant) -> Result<(), RtcError> {
        self.pc
            .handle_timeout(now)
            .map_err(|e| RtcError::Stack(e.to_string()))
    }

    fn poll_output(&mut self) -> Output {
        if self.outputs.is_empty() {
            self.collect();
        }
        if let Some(o) = self.outputs.pop_front() {
            return o;
        }
        if self.closed {
            return Output::Closed;
        }
        // With nothing scheduled, look again in a while (new input wakes it sooner).
        Output::Timeout(
            self.pc
                .poll_timeout()
                .unwrap_or_else(|| Instant::now() + Duration::from_secs(1)),
        )
    }

    fn buffered_amount(&mut self) -> Option<usize> {
        let id = self.channel?;
        self.pc.data_channel(id).map(|dc| dc.outstanding_bytes())
    }

    fn write(&mut self, now: Instant, data: &[u8]) -> bool {
        let Some(mut dc) = self.channel.and_then(|id| self.pc.data_channel(id)) else {
            return false;
        };
        dc.send(now, BytesMut::from(data)).is_ok()
    }

    fn close(&mut self) -> Result<(), RtcError> {
        let r = self.pc.close().map_err(|e| RtcError::Stack(e.to_string()));
        self.closed = true;
        r
    }
}
