//! A peer connection on str0m.

use super::error::RtcError;
use super::peer_conn::{CandidateKind, LABEL, LocalCandidate, Output, PeerConn};
use std::net::SocketAddr;
use std::time::Instant;
use str0m::change::{SdpAnswer, SdpOffer, SdpPendingOffer};
use str0m::channel::{ChannelConfig, ChannelId, Reliability};
use str0m::net::{Protocol, Receive};
use str0m::{Candidate, Event, IceConnectionState, Input, Rtc};

pub struct Str0mConn {
    rtc: Rtc,
    pending: Option<SdpPendingOffer>,
    channel: Option<ChannelId>,
    closed: bool,
}

fn candidate(c: &LocalCandidate) -> Result<Candidate, RtcError> {
    match c.kind {
        CandidateKind::Host => Candidate::host(c.addr, "udp"),
        CandidateKind::ServerReflexive => Candidate::server_reflexive(c.addr, c.base, "udp"),
        CandidateKind::Relayed => Candidate::relayed(c.addr, c.base, "udp"),
    }
    .map_err(|e| RtcError::BadCandidate {
        candidate: *c,
        reason: e.to_string(),
    })
}

/// A datagram from `from` to our `to`, as str0m takes it.
fn received<'a>(
    now: Instant,
    from: SocketAddr,
    to: SocketAddr,
    data: &'a [u8],
) -> Result<Input<'a>, RtcError> {
    let contents = data
        .try_into()
        .map_err(|e| RtcError::BadDatagram(format!("{e}")))?;
    Ok(Input::Receive(
        now,
        Receive {
            proto: Protocol::Udp,
            source: from,
            destination: to,
            contents,
        },
    ))
}

impl Str0mConn {
    fn new(now: Instant, candidates: &[LocalCandidate]) -> Result<Str0mConn, RtcError> {
        let mut rtc = Rtc::new(now);
        for c in candidates {
            rtc.add_local_candidate(candidate(c)?);
        }
        Ok(Str0mConn {
            rtc,
            pending: None,
            channel: None,
            closed: false,
        })
    }

    /// Time starts now: str0m's ICE agent schedules no checks of its own before its first
    /// timeout, so without this an answerer only ever answered checks (and one behind a NAT
    /// that drops unsolicited packets never connected).
    fn start(mut self: Box<Self>, now: Instant) -> Box<Self> {
        self.closed = self.rtc.handle_input(Input::Timeout(now)).is_err();
        self
    }

    pub fn offer(
        now: Instant,
        candidates: &[LocalCandidate],
    ) -> Result<(Box<dyn PeerConn>, String), RtcError> {
        let mut conn = Str0mConn::new(now, candidates)?;
        let mut api = conn.rtc.sdp_api();
        api.add_channel_with_config(ChannelConfig {
            label: LABEL.to_string(),
            ordered: false,
            reliability: Reliability::MaxRetransmits { retransmits: 0 },
            ..Default::default()
        });
        let (offer, pending) = api.apply().ok_or(RtcError::NoOffer)?;
        conn.pending = Some(pending);
        Ok((Box::new(conn).start(now), offer.to_sdp_string()))
    }

    pub fn answer(
        now: Instant,
        candidates: &[LocalCandidate],
        offer: &str,
    ) -> Result<(Box<dyn PeerConn>, String), RtcError> {
        let offer =
            SdpOffer::from_sdp_string(offer).map_err(|e| RtcError::BadOffer(e.to_string()))?;
        let mut conn = Str0mConn::new(now, candidates)?;
        let answer = conn
            .rtc
            .sdp_api()
            .accept_offer(offer)
            .map_err(|e| RtcError::CannotAnswer(e.to_string()))?;
        Ok((Box::new(conn).start(now), answer.to_sdp_string()))
    }
}

impl PeerConn for Str0mConn {
    fn accept_answer(&mut self, sdp: &str) -> Result<(), RtcError> {
        let pending = self.pending.take().ok_or(RtcError::NoPendingOffer)?;
        let answer =
            SdpAnswer::from_sdp_string(sdp).map_err(|e| RtcError::BadAnswer(e.to_string()))?;
        self.rtc
            .sdp_api()
            .accept_answer(pending, answer)
            .map_err(|e| RtcError::CannotAcceptAnswer(e.to_string()))
    }

    fn add_remote_candidate(&mut self, line: &str) {
        if let Ok(c) = Candidate::from_sdp_string(line) {
            self.rtc.add_remote_candidate(c);
        }
    }

    fn add_local_candidate(&mut self, c: &LocalCandidate) -> Option<String> {
        let c = candidate(c).ok()?;
        self.rtc.add_local_candidate(c).map(|c| c.to_sdp_string())
    }

    fn accepts(&self, from: SocketAddr, to: SocketAddr, data: &[u8]) -> bool {
        received(Instant::now(), from, to, data).is_ok_and(|input| self.rtc.accepts(&input))
    }

    fn receive(
        &mut self,
        now: Instant,
        from: SocketAddr,
        to: SocketAddr,
        data: &[u8],
    ) -> Result<(), RtcError> {
        let input = received(now, from, to, data)?;
        self.rtc
            .handle_input(input)
            .map_err(|e| RtcError::Stack(e.to_string()))
    }

    fn handle_timeout(&mut self, now: Instant) -> Result<(), RtcError> {
        self.rtc
            .handle_input(Input::Timeout(now))
            .map_err(|e| RtcError::Stack(e.to_string()))
    }

    fn poll_output(&mut self) -> Output {
        loop {
            if self.closed || !self.rtc.is_alive() {
                self.closed = true;
                return Output::Closed;
            }
            match self.rtc.poll_output() {
                Ok(str0m::Output::Timeout(t)) => return Output::Timeout(t),
                Ok(str0m::Output::Transmit(t)) => {
                    return Output::Transmit {
                        source: t.source,
                        destination: t.destination,
                        data: t.contents.to_vec(),
                    };
                }
                Ok(str0m::Output::Event(e)) => match e {
                    Event::ChannelOpen(cid, _) if self.channel.is_none() => {
                        self.channel = Some(cid);
                        return Output::Open;
                    }
                    Event::ChannelData(d) if Some(d.id) == self.channel => {
                        return Output::Data(d.data);
                    }
                    Event::ChannelClose(cid) if Some(cid) == self.channel => self.closed = true,
                    Event::IceConnectionStateChange(IceConnectionState::Disconnected) => {
                        self.closed = true;
                    }
                    _ => {}
                },
                Err(_) => self.closed = true,
            }
        }
    }

    fn buffered_amount(&mut self) -> Option<usize> {
        let cid = self.channel?;
        self.rtc.channel(cid).map(|mut ch| ch.buffered_amount())
    }

    fn write(&mut self, _now: Instant, data: &[u8]) -> bool {
        let Some(mut ch) = self.channel.and_then(|cid| self.rtc.channel(cid)) else {
            return false;
        };
        matches!(ch.write(true, data), Ok(true))
    }

    fn close(&mut self) -> Result<(), RtcError> {
        if let Err(e) = self.rtc.close() {
            // Graceful close (SCTP shutdown, DTLS close_notify) failed: just drop it.
            self.rtc.disconnect();
            self.closed = true;
            return Err(RtcError::Stack(e.to_string()));
        }
        Ok(())
    }
}
