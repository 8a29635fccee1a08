//! Peers are opaque addresses to the engine: a UDP socket address, a WebRTC connection
//! handle or a simulator node all work. Only PEX needs to turn one into an IP address.

use core::fmt::Debug;
use core::hash::Hash;
use std::net::SocketAddr;

/// What the engine needs from a peer address.
pub trait PeerAddr: Clone + Eq + Hash + Ord + Debug {
    /// The IP address to tell others about in PEX, if this transport has one.
    fn socket_addr(&self) -> Option<SocketAddr> {
        None
    }

    /// The address to contact a peer learnt through PEX, if this transport can.
    fn from_socket_addr(_addr: SocketAddr) -> Option<Self> {
        None
    }
}

impl PeerAddr for SocketAddr {
    fn socket_addr(&self) -> Option<SocketAddr> {
        Some(*self)
    }

    fn from_socket_addr(addr: SocketAddr) -> Option<Self> {
        Some(addr)
    }
}

impl PeerAddr for u64 {}
impl PeerAddr for u32 {}

/// True for addresses that must not be passed on to peers outside a private network
/// (RFC 7574 §3.10: no private or link-local addresses to a public requester).
pub fn is_private(addr: &SocketAddr) -> bool {
    match addr {
        SocketAddr::V4(a) => {
            let ip = a.ip();
            ip.is_private() || ip.is_loopback() || ip.is_link_local() || ip.is_unspecified()
        }
        SocketAddr::V6(a) => {
            let ip = a.ip();
            let seg0 = ip.segments()[0];
            ip.is_loopback()
                || ip.is_unspecified()
                || (seg0 & 0xfe00) == 0xfc00 // unique local
                || (seg0 & 0xffc0) == 0xfe80 // link local
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_ranges() {
        for a in [
            "10.1.2.3:1",
            "192.168.0.1:1",
            "127.0.0.1:1",
            "169.254.1.1:1",
            "[::1]:1",
            "[fe80::1]:1",
            "[fd00::1]:1",
        ] {
            assert!(is_private(&a.parse().unwrap()), "{a}");
        }
        for a in ["8.8.8.8:53", "[2001:db8::1]:1"] {
            assert!(!is_private(&a.parse().unwrap()), "{a}");
        }
    }
}
