//! The state the engine keeps per peer: one PPSPP channel.

use super::announce::Announcing;
use super::channel_handshake::ChannelHandshake;
use super::channel_pex::ChannelPex;
use super::choke::ChokeState;
use super::delivery::Delivery;
use super::event::SendState;
use super::in_flight::DataInFlight;
use super::live_peer::LivePeer;
use super::liveness::Liveness;
use super::outstanding::OutstandingRequests;
use super::peer_holdings::PeerHoldings;
use super::request::request_expiry;
use super::send_pacing::SendPacing;
use super::serve_queue::ServeQueue;
use super::usefulness::Usefulness;
use crate::Bin;
use crate::codec::CodecConfig;
use crate::congestion::CongestionConfig;
use crate::merkle::Hash;
use crate::time::Time;
use core::time::Duration;

#[derive(Debug)]
pub(crate) struct Channel<A> {
    pub addr: A,
    pub local_id: u32,
    /// The handshake: the peer's channel ID, retries, whether the channel is established.
    pub handshake: ChannelHandshake,
    pub codec: CodecConfig,

    /// What the peer holds, as it says and as we presume.
    pub holdings: PeerHoldings,
    /// The HAVEs and ACKs we send the peer.
    pub announcing: Announcing,
    /// Hashes received ahead of the DATA they protect.
    pub pending_hashes: Vec<(Bin, Hash)>,
    /// Live: the peer's view of the stream (munro told, its run, signatures, window).
    pub live: LivePeer,

    // Receiving from this peer.
    /// Chunks asked of the peer and not received; REQUESTs and CANCELs to send.
    pub requests: OutstandingRequests,
    /// How the peer delivers to us: its pace, and whether it delivers at all.
    pub delivery: Delivery,
    /// Whether the peer was of use to us (a peer that never was only holds a slot).
    pub usefulness: Usefulness,

    // Sending to this peer.
    /// What the peer asked for and waits to be sent.
    pub serve_queue: ServeQueue,
    /// DATA sent and neither acknowledged nor taken for lost.
    pub in_flight: DataInFlight,
    /// Congestion control, the round-trip estimate, and when the next DATA may leave.
    pub sending: SendPacing,
    /// Whether we choke the peer and it chokes us, and the CHOKE or UNCHOKE to send.
    pub choke: ChokeState,
    /// The priority is raised for urgent requests.
    pub urgent: bool,
    /// An origin: asked only for chunks due for playback or that no other peer holds.
    pub origin: bool,

    /// Peer exchange: when to ask the peer for addresses, and what waits to go out.
    pub pex: ChannelPex,

    /// When we last heard from the peer and sent to it, keep-alives, and a close.
    pub liveness: Liveness,

    // Figures.
    pub bytes_up: u64,
    pub bytes_down: u64,
}

impl<A> Channel<A> {
    /// Chokes the peer: a CHOKE goes out, and what was queued for it is dropped.
    pub fn stop_serving(&mut self) {
        self.choke.choke();
        self.serve_queue.drop_requests();
    }

    pub fn new(
        addr: A,
        local_id: u32,
        codec: CodecConfig,
        congestion: &CongestionConfig,
        now: Time,
    ) -> Channel<A> {
        Channel {
            addr,
            local_id,
            handshake: ChannelHandshake::new(),
            codec,
            holdings: PeerHoldings::new(),
            announcing: Announcing::new(now),
            pending_hashes: Vec::new(),
            live: LivePeer::new(),
            requests: OutstandingRequests::new(),
            delivery: Delivery::new(now),
            usefulness: Usefulness::new(now),
            serve_queue: ServeQueue::new(),
            in_flight: DataInFlight::new(),
            sending: SendPacing::new(congestion, now),
            choke: ChokeState::new(),
            urgent: false,
            origin: false,
            pex: ChannelPex::new(),
            liveness: Liveness::new(now),
            bytes_up: 0,
            bytes_down: 0,
        }
    }

    /// Asks the peer for the chunks of `bin` at `now`. With nothing waiting at it, a new
    /// wait for it starts (see WITHHOLDING in `timers.rs`), unless we ask again right
    /// after requests to it expired.
    pub fn ask(&mut self, now: Time, bin: Bin) {
        if self.requests.is_empty() {
            self.delivery
                .wait_begins(now, request_expiry(self.planning_rtt()));
        }
        self.requests.ask(now, bin);
    }

    /// No DATA to this peer was lost lately: hashes sent with DATA still in flight can be
    /// counted on to arrive (see `integrity_for`).
    pub fn path_is_clean(&self, now: Time) -> bool {
        let calm = (4 * self.sending.srtt()).max(Duration::from_secs(1));
        self.in_flight.no_loss_for(now, calm)
    }

    pub fn send_state(&self, has_work: bool) -> SendState {
        if !has_work && self.in_flight.is_empty() {
            SendState::KeepAlive
        } else {
            self.sending.state()
        }
    }

    /// The round trip a receiver plans its requests with: the smoothed RTT, but never less
    /// than the fastest request→data time seen (a receiver that sends no DATA has no RTT
    /// samples of its own, and a handshake answered after a retry cannot time one).
    pub fn planning_rtt(&self) -> Duration {
        self.sending
            .srtt()
            .max(self.delivery.min_request_rtt().unwrap_or(Duration::ZERO))
    }
}

#[cfg(test)]
mod tests {
    use super::Channel;
    use crate::Bin;
    use crate::codec::CodecConfig;
    use crate::congestion::CongestionConfig;
    use crate::time::Time;
    use core::time::Duration;

    fn channel() -> Channel<u32> {
        let congestion = CongestionConfig::default();
        Channel::new(7, 1, CodecConfig::default(), &congestion, Time::ZERO)
    }

    #[test]
    fn every_ask_of_an_idle_peer_starts_a_wait() {
        let mut ch = channel();
        let chunk = |c| Bin::chunk(c).unwrap();
        ch.ask(Time::from_millis(1_000), chunk(1));
        assert_eq!(
            ch.delivery.since_delivery(Time::from_millis(2_000)),
            Duration::from_secs(1)
        );
        // The request expires; nothing is asked of the peer for a minute.
        ch.requests
            .expire(Time::from_millis(5_000), Duration::from_secs(2));
        ch.delivery
            .requests_expired(Time::from_millis(5_000), Duration::from_secs(2), true);
        assert!(ch.requests.is_empty());
        ch.ask(Time::from_millis(65_000), chunk(2));
        assert_eq!(
            ch.delivery.since_delivery(Time::from_millis(66_000)),
            Duration::from_secs(1),
            "its silence is judged from the new request"
        );
        // Asked again right after that one expires: the silence counts on.
        ch.requests
            .expire(Time::from_millis(69_000), Duration::from_secs(2));
        ch.delivery
            .requests_expired(Time::from_millis(69_000), Duration::from_secs(2), true);
        ch.ask(Time::from_millis(69_000), chunk(3));
        assert_eq!(
            ch.delivery.since_delivery(Time::from_millis(70_000)),
            Duration::from_secs(5)
        );
    }
}
