//! Naming the candidate pair a connection ended up on, for the line printed when its
//! channel opens: the remote's candidates as its SDP and trickled lines give them, and
//! which datagrams show the selected pair. Apart because neither stack reports the pair,
//! so the transport works it out from what it sees.

use std::net::SocketAddr;

/// Remote candidates kept per connection for the selected pair's report: a remote may
/// trickle any number.
pub(super) const MAX_REMOTE_CANDIDATES: usize = 32;

/// A remote ICE candidate's address and type (`host`, `srflx`, `relay`, …).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct RemoteCandidate {
    pub(super) addr: SocketAddr,
    pub(super) typ: String,
}

impl RemoteCandidate {
    /// Adds the candidates of SDP `text` (`a=candidate:` lines, or one trickled line) to
    /// `known`, up to [`MAX_REMOTE_CANDIDATES`].
    pub(super) fn add_all(known: &mut Vec<RemoteCandidate>, text: &str) {
        let room = MAX_REMOTE_CANDIDATES.saturating_sub(known.len());
        known.extend(text.lines().filter_map(Self::parse).take(room));
    }

    /// `candidate:FOUNDATION COMPONENT PROTO PRIORITY IP PORT typ TYPE …` (RFC 8839 §5.1).
    fn parse(line: &str) -> Option<RemoteCandidate> {
        let rest = &line[line.find("candidate:")? + "candidate:".len()..];
        let f: Vec<&str> = rest.split_whitespace().collect();
        if f.len() < 8 || f[6] != "typ" {
            return None;
        }
        let ip: std::net::IpAddr = f[4].parse().ok()?;
        let port: u16 = f[5].parse().ok()?;
        Some(RemoteCandidate {
            addr: SocketAddr::new(ip, port),
            typ: f[7].to_string(),
        })
    }
}

/// Whether `data` is a DTLS record (RFC 7983's demultiplexing: first byte 20..=63), which
/// goes over the selected pair only; ICE checks (STUN) go over every pair.
pub(super) fn is_dtls(data: &[u8]) -> bool {
    data.first().is_some_and(|b| (20..=63).contains(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_candidates_are_read_from_sdp_and_trickled_lines() {
        let sdp = "v=0\r\na=candidate:1 1 udp 2130706431 192.0.2.7 5000 typ host\r\n\
                   a=candidate:2 1 udp 16777215 198.51.100.10 49152 typ relay raddr 0.0.0.0 rport 0\r\n\
                   a=candidate:3 1 udp 1 nonsense 1 typ host\r\na=mid:0\r\n";
        let mut got = Vec::new();
        RemoteCandidate::add_all(&mut got, sdp);
        let want = [("192.0.2.7:5000", "host"), ("198.51.100.10:49152", "relay")];
        assert_eq!(got.len(), 2, "{got:?}");
        for (c, (addr, typ)) in got.iter().zip(want) {
            assert_eq!(c.addr, addr.parse::<SocketAddr>().unwrap());
            assert_eq!(c.typ, typ);
        }
        let trickled =
            "candidate:4 1 udp 1694498815 203.0.113.3 61000 typ srflx raddr 192.168.3.2 rport 4000";
        assert_eq!(RemoteCandidate::parse(trickled).unwrap().typ, "srflx");
        assert!(RemoteCandidate::parse("candidate:5 1 udp 1 192.0.2.7 5000").is_none());
        assert!(is_dtls(&[22, 254, 253]) && !is_dtls(&[0, 1]) && !is_dtls(&[]));
        // A remote trickling without end is kept to a bound.
        for _ in 0..100 {
            RemoteCandidate::add_all(&mut got, trickled);
        }
        assert_eq!(got.len(), MAX_REMOTE_CANDIDATES);
    }
}
