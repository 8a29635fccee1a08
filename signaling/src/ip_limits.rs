//! Per-address limits: how many HTTP connections not yet upgraded (handshakes, health
//! checks) and how many WebSocket connections one client address may hold, so that one
//! address cannot take every slot of the server-wide limits.
//!
//! The address is the TCP peer's. IPv6 addresses count per /64, the block a single
//! subscriber usually gets, since one host can use any address of it.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// The unit a limit counts: an IPv4 address, or the /64 of an IPv6 address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Origin(IpAddr);

impl Origin {
    pub(crate) fn of(ip: IpAddr) -> Origin {
        match ip.to_canonical() {
            IpAddr::V4(v4) => Origin(IpAddr::V4(v4)),
            IpAddr::V6(v6) => {
                let prefix = u128::from(v6) & !((1u128 << 64) - 1);
                Origin(IpAddr::V6(prefix.into()))
            }
        }
    }
}

/// Which limit a slot counts against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// An HTTP connection not (yet) upgraded.
    Http,
    /// A WebSocket connection.
    Ws,
}

#[derive(Default)]
struct Count {
    http: usize,
    ws: usize,
}

/// Open connections per origin. Entries exist only while an origin holds a slot.
#[derive(Default)]
pub(crate) struct IpLimits {
    counts: Mutex<HashMap<Origin, Count>>,
}

/// One slot of an origin; freed when dropped.
pub(crate) struct IpSlot {
    owner: Arc<IpLimits>,
    origin: Origin,
    kind: Kind,
}

impl IpLimits {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Origin, Count>> {
        // Counts are updated in one statement each, so a poisoned lock is still usable.
        self.counts.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A slot of `kind` for `ip`, unless it already holds `max` of them.
    pub(crate) fn try_acquire(
        self: &Arc<Self>,
        ip: IpAddr,
        kind: Kind,
        max: usize,
    ) -> Option<IpSlot> {
        let origin = Origin::of(ip);
        let mut g = self.lock();
        let c = g.entry(origin).or_default();
        let n = match kind {
            Kind::Http => &mut c.http,
            Kind::Ws => &mut c.ws,
        };
        if *n >= max {
            if c.http == 0 && c.ws == 0 {
                g.remove(&origin);
            }
            return None;
        }
        *n += 1;
        Some(IpSlot {
            owner: self.clone(),
            origin,
            kind,
        })
    }

    /// Origins holding at least one slot.
    #[cfg(test)]
    fn origins(&self) -> usize {
        self.lock().len()
    }
}

impl Drop for IpSlot {
    fn drop(&mut self) {
        let mut g = self.owner.lock();
        if let Some(c) = g.get_mut(&self.origin) {
            let n = match self.kind {
                Kind::Http => &mut c.http,
                Kind::Ws => &mut c.ws,
            };
            *n = n.saturating_sub(1);
            if c.http == 0 && c.ws == 0 {
                g.remove(&self.origin);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_per_origin_and_forgets_empty_ones() {
        let l = Arc::new(IpLimits::default());
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "192.0.2.2".parse().unwrap();
        let s1 = l.try_acquire(a, Kind::Http, 2).unwrap();
        let s2 = l.try_acquire(a, Kind::Http, 2).unwrap();
        assert!(l.try_acquire(a, Kind::Http, 2).is_none());
        // The other kind and other addresses have their own counts.
        let w = l.try_acquire(a, Kind::Ws, 1).unwrap();
        assert!(l.try_acquire(a, Kind::Ws, 1).is_none());
        let o = l.try_acquire(b, Kind::Http, 2).unwrap();
        drop(s1);
        let s3 = l.try_acquire(a, Kind::Http, 2).unwrap();
        drop((s2, s3, w, o));
        assert_eq!(l.origins(), 0);
        assert!(l.try_acquire(b, Kind::Ws, 0).is_none());
        assert_eq!(l.origins(), 0);
    }

    #[test]
    fn ipv6_counts_per_64_and_mapped_v4_as_v4() {
        let l = Arc::new(IpLimits::default());
        let x: IpAddr = "2001:db8:1:2::1".parse().unwrap();
        let y: IpAddr = "2001:db8:1:2:ffff::9".parse().unwrap();
        let z: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        let _s = l.try_acquire(x, Kind::Ws, 1).unwrap();
        assert!(l.try_acquire(y, Kind::Ws, 1).is_none());
        assert!(l.try_acquire(z, Kind::Ws, 1).is_some());
        let v4: IpAddr = "192.0.2.7".parse().unwrap();
        let mapped: IpAddr = "::ffff:192.0.2.7".parse().unwrap();
        let _m = l.try_acquire(v4, Kind::Ws, 1).unwrap();
        assert!(l.try_acquire(mapped, Kind::Ws, 1).is_none());
    }
}
