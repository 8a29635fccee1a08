//! The one surface every state machine of this crate offers its driver, so an adapter
//! writes its loop once for the [`Engine`](super::Engine) and the
//! [`Discovery`](super::Discovery) alike.
//!
//! A driver loop, in order: hand in what arrived (`handle_datagram`) or, when the
//! deadline of `poll_timeout` passes, the time (`handle_timeout`); then send everything
//! `poll_transmit` writes until it returns `None`; then act on every `poll_event`; then
//! sleep until the next datagram or deadline. `examples/driver_loop.rs` is a runnable one.

use super::addr::PeerAddr;
use crate::time::Time;

/// What a `connect` call did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Connect {
    /// A handshake goes out on the next `poll_transmit`.
    Started,
    /// There is a channel (or probe) to that peer already.
    AlreadyConnected,
    /// The peer broke the rules before and is never contacted again.
    Banned,
    /// The address turned out to be our own.
    OwnAddress,
    /// The engine holds as many channels as `EngineConfig::max_peers` allows.
    Full,
    /// There is nothing left to ask (discovery already learnt the content).
    Finished,
}

impl Connect {
    /// True if a handshake is on its way or a channel exists.
    pub fn is_connected(self) -> bool {
        matches!(self, Connect::Started | Connect::AlreadyConnected)
    }
}

/// A sans-IO peer: datagrams and time in, datagrams and events out. It never reads a
/// clock, a socket or a random source of its own.
pub trait SansIo {
    /// How peers are named (a socket address, a data-channel handle, a simulated node).
    type Addr: PeerAddr;
    /// What it reports to the driver.
    type Event;

    /// Starts talking to `peer`.
    fn connect(&mut self, peer: Self::Addr, now: Time) -> Connect;
    /// The transport to `peer` is gone (a WebRTC connection closed): forget it silently.
    fn peer_lost(&mut self, peer: &Self::Addr);
    /// The transport to `peer` carries datagrams of several DATA up to `max_len` bytes,
    /// and the peer said it reads them (see `Engine::set_data_batching`). Ignored by what
    /// sends no DATA.
    fn set_data_batching(&mut self, _peer: &Self::Addr, _max_len: Option<usize>) {}
    /// A datagram from `from`. Anything malformed or unexpected is dropped (and may end
    /// that peer's channel); nothing a peer sends makes this fail or panic.
    fn handle_datagram(&mut self, now: Time, from: Self::Addr, bytes: &[u8]);
    /// The deadline of [`poll_timeout`](Self::poll_timeout) passed.
    fn handle_timeout(&mut self, now: Time);
    /// When to call [`handle_timeout`](Self::handle_timeout) next (`None`: only when a
    /// datagram arrives). A deadline at or before the driver's clock means "now". Once
    /// `handle_timeout(now)` has run, the deadline is later than `now` (or `None`), so a
    /// driver that obeys it never spins and needs no guard of its own.
    fn poll_timeout(&self) -> Option<Time>;
    /// Writes the next datagram into `buf` (replacing what it held) and returns where it
    /// goes; `None` when nothing is due.
    fn poll_transmit(&mut self, now: Time, buf: &mut Vec<u8>) -> Option<Self::Addr>;
    /// The next event, if any.
    fn poll_event(&mut self) -> Option<Self::Event>;
}
