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

/// How far an address reaches, narrowest first: a peer may name peers of its own reach or
/// wider, never narrower (a public peer cannot send us probing our LAN or our own ports).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Reach {
    Loopback,
    LinkLocal,
    Private,
    Public,
}

fn reach(addr: &SocketAddr) -> Reach {
    match addr {
        SocketAddr::V4(a) => {
            let ip = a.ip();
            if ip.is_loopback() {
                Reach::Loopback
            } else if ip.is_link_local() {
                Reach::LinkLocal
            } else if ip.is_private() || (ip.octets()[0] == 100 && ip.octets()[1] & 0xc0 == 64) {
                // RFC 1918 and the carrier-grade NAT range (RFC 6598).
                Reach::Private
            } else {
                Reach::Public
            }
        }
        SocketAddr::V6(a) => {
            let ip = a.ip();
            let seg0 = ip.segments()[0];
            if ip.is_loopback() {
                Reach::Loopback
            } else if (seg0 & 0xffc0) == 0xfe80 {
                Reach::LinkLocal
            } else if (seg0 & 0xfe00) == 0xfc00 {
                Reach::Private
            } else {
                Reach::Public
            }
        }
    }
}

/// Whether a peer address learnt through PEX from `from` (`None`: a transport without
/// IP addresses, taken as public) may be contacted: never port 0, an unspecified,
/// broadcast or multicast address, and only addresses that reach at least as far as the
/// sender's (RFC 7574 §3.10 keeps private addresses from public peers; this is its other
/// side, so a public peer cannot make us send to our LAN, a cloud metadata address or
/// our own machine).
pub fn pex_address_usable(addr: &SocketAddr, from: Option<&SocketAddr>) -> bool {
    let special = match addr {
        SocketAddr::V4(a) => {
            let ip = a.ip();
            ip.is_unspecified() || ip.is_broadcast() || ip.is_multicast()
        }
        SocketAddr::V6(a) => {
            let ip = a.ip();
            let seg = ip.segments();
            // IPv4 inside IPv6 (mapped, compatible, NAT64's 64:ff9b::/96, 6to4's
            // 2002::/16) could name any IPv4 address behind a public-looking one, and
            // fec0::/10 is the old site-local range.
            let embeds_v4 = ip.to_ipv4_mapped().is_some()
                || (seg[..6] == [0; 6] && !ip.is_loopback())
                || seg[..6] == [0x64, 0xff9b, 0, 0, 0, 0]
                || seg[0] == 0x2002;
            ip.is_unspecified() || ip.is_multicast() || embeds_v4 || (seg[0] & 0xffc0) == 0xfec0
        }
    };
    if special || addr.port() == 0 {
        return false;
    }
    let sender = from.map_or(Reach::Public, reach);
    reach(addr) >= sender
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pex_addresses_reach_at_least_as_far_as_their_sender() {
        let public: SocketAddr = "203.0.113.5:7000".parse().unwrap();
        let lan: SocketAddr = "192.168.1.2:7000".parse().unwrap();
        let local: SocketAddr = "127.0.0.1:7000".parse().unwrap();
        let usable =
            |a: &str, from: Option<&SocketAddr>| pex_address_usable(&a.parse().unwrap(), from);
        for bad in [
            "10.0.0.1:7000",
            "192.168.0.1:7000",
            "172.16.0.1:7000",
            "100.64.0.1:7000",
            "169.254.169.254:80",
            "127.0.0.1:22",
            "[::1]:7000",
            "[fe80::1]:7000",
            "[fd00::1]:7000",
        ] {
            assert!(!usable(bad, Some(&public)), "{bad} from a public peer");
            assert!(!usable(bad, None), "{bad} from a peer of no address");
        }
        for never in [
            "0.0.0.0:7000",
            "255.255.255.255:7000",
            "224.0.0.251:5353",
            "[ff02::1]:7000",
            "[::]:7000",
            "[::ffff:127.0.0.1]:7000",
            "[::127.0.0.1]:7000",
            "[64:ff9b::a9fe:a9fe]:80",
            "[2002:c0a8:101::1]:7000",
            "[fec0::1]:7000",
            "198.51.100.7:0",
        ] {
            for from in [&public, &lan, &local] {
                assert!(!usable(never, Some(from)), "{never} from {from}");
            }
        }
        assert!(usable("198.51.100.7:7000", Some(&public)));
        assert!(usable("[2001:db8::1]:7000", Some(&public)));
        assert!(usable("192.168.1.3:7000", Some(&lan)));
        assert!(usable("198.51.100.7:7000", Some(&lan)));
        assert!(!usable("127.0.0.1:7001", Some(&lan)));
        assert!(usable("127.0.0.1:7001", Some(&local)));
        let local6: SocketAddr = "[::1]:7000".parse().unwrap();
        assert!(usable("[::1]:7001", Some(&local6)));
        assert!(usable("192.168.1.3:7000", Some(&local)));
    }

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
