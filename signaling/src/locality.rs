//! Network closeness of peers, for the `welcome`'s sample: a newcomer is offered first the
//! peers in its own address block (an IPv4 /24, an IPv6 /48 by default), then those in its
//! autonomous system (from a prefix-to-AS table the operator supplies), then the rest; a
//! share of the sample is always drawn from the whole room, so that a swarm spread over
//! networks does not split into islands that never exchange.
//!
//! Peers close to each other exchange faster (shorter round trips under LEDBAT), and
//! traffic that stays inside a network costs its operator nothing.

use std::fmt;
use std::net::IpAddr;
use std::path::Path;

use ipnet::{Ipv4Net, Ipv6Net};
use prefix_trie::PrefixMap;
use rand::Rng;
use rand::seq::SliceRandom;

/// Where a peer is, as far as sampling cares: its address block and its AS, if known.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct Locality {
    /// The client's address block, e.g. `203.0.113.0/24`.
    pub block: Option<String>,
    /// The AS originating the client's address, from the table.
    pub asn: Option<u32>,
}

impl Locality {
    /// How close `other` is to `self`: 0 the same block, 1 the same AS, 2 anywhere.
    fn distance(&self, other: &Locality) -> u8 {
        if self.block.is_some() && self.block == other.block {
            0
        } else if self.asn.is_some() && self.asn == other.asn {
            1
        } else {
            2
        }
    }

    /// The text kept beside a peer in Redis: `block|asn` (either may be empty).
    pub(crate) fn tag(&self) -> String {
        format!(
            "{}|{}",
            self.block.as_deref().unwrap_or(""),
            self.asn.map(|a| a.to_string()).unwrap_or_default()
        )
    }

    /// Reads a [`tag`](Self::tag); anything else is a peer of unknown whereabouts.
    pub(crate) fn from_tag(tag: &str) -> Locality {
        let (block, asn) = tag.split_once('|').unwrap_or(("", ""));
        Locality {
            block: (!block.is_empty()).then(|| block.to_owned()),
            asn: asn.parse().ok(),
        }
    }
}

/// A prefix-to-AS table in CAIDA's pfx2as text format: one `address<TAB>length<TAB>AS`
/// line per prefix (the AS may be `A_B` for several origins or `{A,B}` for a set: the
/// first is taken). Lookups take the longest matching prefix.
#[derive(Default)]
pub struct AsTable {
    v4: PrefixMap<Ipv4Net, u32>,
    v6: PrefixMap<Ipv6Net, u32>,
    prefixes: usize,
}

impl fmt::Debug for AsTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AsTable({} prefixes)", self.prefixes)
    }
}

impl PartialEq for AsTable {
    fn eq(&self, other: &Self) -> bool {
        self.prefixes == other.prefixes && self.v4 == other.v4 && self.v6 == other.v6
    }
}

impl AsTable {
    /// Reads a table from `path`; the error names the line that is wrong.
    pub fn from_file(path: &Path) -> Result<AsTable, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        AsTable::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Parses a table's text. Blank lines and lines starting with `#` are skipped.
    pub fn parse(text: &str) -> Result<AsTable, String> {
        let mut table = AsTable::default();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = |why: &str| format!("line {}: {why}: {line:?}", i + 1);
            let mut fields = line.split_whitespace();
            let (Some(addr), Some(len), Some(asn)) = (fields.next(), fields.next(), fields.next())
            else {
                return Err(bad("expected address, prefix length and AS"));
            };
            let addr: IpAddr = addr.parse().map_err(|_| bad("not an IP address"))?;
            let len: u8 = len.parse().map_err(|_| bad("not a prefix length"))?;
            let first = asn
                .trim_start_matches('{')
                .split(['_', ',', '}'])
                .next()
                .unwrap_or("");
            let asn: u32 = first.parse().map_err(|_| bad("not an AS number"))?;
            match addr {
                IpAddr::V4(a) => {
                    let net = Ipv4Net::new(a, len).map_err(|_| bad("prefix length over 32"))?;
                    table.v4.insert(net.trunc(), asn);
                }
                IpAddr::V6(a) => {
                    let net = Ipv6Net::new(a, len).map_err(|_| bad("prefix length over 128"))?;
                    table.v6.insert(net.trunc(), asn);
                }
            }
            table.prefixes += 1;
        }
        if table.prefixes == 0 {
            return Err("no prefixes in the table".into());
        }
        Ok(table)
    }

    /// How many prefixes it holds.
    pub fn len(&self) -> usize {
        self.prefixes
    }

    /// Whether it holds none (a parsed table never is).
    pub fn is_empty(&self) -> bool {
        self.prefixes == 0
    }

    /// The AS of `ip`, by the longest prefix that holds it.
    pub fn lookup(&self, ip: IpAddr) -> Option<u32> {
        match ip {
            IpAddr::V4(a) => self.v4.get_lpm(&Ipv4Net::from(a)).map(|(_, asn)| *asn),
            IpAddr::V6(a) => match a.to_ipv4_mapped() {
                Some(v4) => self.lookup(IpAddr::V4(v4)),
                None => self.v6.get_lpm(&Ipv6Net::from(a)).map(|(_, asn)| *asn),
            },
        }
    }
}

/// How closeness is judged: block sizes, the AS table, and the share drawn at random.
#[derive(Debug, PartialEq)]
pub(crate) struct Judge<'a> {
    pub v4_prefix: u8,
    pub v6_prefix: u8,
    pub as_table: Option<&'a AsTable>,
}

impl Judge<'_> {
    /// Where the client at `ip` is.
    pub(crate) fn locate(&self, ip: IpAddr) -> Locality {
        let ip = match ip {
            IpAddr::V6(a) => a.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        let block = match ip {
            IpAddr::V4(a) if self.v4_prefix > 0 => Ipv4Net::new(a, self.v4_prefix.min(32))
                .ok()
                .map(|n| n.trunc().to_string()),
            IpAddr::V6(a) if self.v6_prefix > 0 => Ipv6Net::new(a, self.v6_prefix.min(128))
                .ok()
                .map(|n| n.trunc().to_string()),
            _ => None,
        };
        Locality {
            block,
            asn: self.as_table.and_then(|t| t.lookup(ip)),
        }
    }
}

/// Up to `size` of `candidates` for a newcomer at `me`: `random` of them drawn from all
/// at random, the rest the closest (same block, then same AS, then any), at random within
/// each class.
pub(crate) fn sample<K: Copy, L: std::borrow::Borrow<Locality>>(
    me: &Locality,
    candidates: &[(K, L)],
    size: usize,
    random: usize,
    rng: &mut impl Rng,
) -> Vec<K> {
    let size = size.min(candidates.len());
    let mut order: Vec<usize> = (0..candidates.len()).collect();
    order.shuffle(rng);
    let random = random.min(size);
    let (drawn, rest) = order.split_at_mut(random);
    // A stable sort keeps the shuffle's order within each class.
    rest.sort_by_key(|&i| me.distance(candidates[i].1.borrow()));
    drawn
        .iter()
        .chain(rest.iter())
        .take(size)
        .map(|&i| candidates[i].0)
        .collect()
}

/// How many of a sample of `size` are drawn from the whole room: `share` of it, rounded,
/// and at least one once the sample has two places (so no newcomer sees only its block).
pub(crate) fn random_places(size: usize, share: f64) -> usize {
    let n = (size as f64 * share.clamp(0.0, 1.0)).round() as usize;
    if share > 0.0 && size >= 2 {
        n.max(1)
    } else {
        n
    }
    .min(size)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    const TABLE: &str = "# prefix-to-AS, CAIDA's format\n\
        198.51.100.0\t24\t64500\n\
        198.51.0.0\t16\t64501\n\
        203.0.113.0\t24\t64502_64503\n\
        2001:db8::\t32\t{64504,64505}\n";

    fn judge(table: Option<&AsTable>) -> Judge<'_> {
        Judge {
            v4_prefix: 24,
            v6_prefix: 48,
            as_table: table,
        }
    }

    #[test]
    fn the_table_takes_the_longest_prefix_and_the_first_origin() {
        let t = AsTable::parse(TABLE).unwrap();
        assert_eq!(t.len(), 4);
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert_eq!(t.lookup(ip("198.51.100.7")), Some(64500));
        assert_eq!(t.lookup(ip("198.51.7.7")), Some(64501));
        assert_eq!(t.lookup(ip("203.0.113.200")), Some(64502));
        assert_eq!(t.lookup(ip("2001:db8:1::5")), Some(64504));
        assert_eq!(t.lookup(ip("::ffff:198.51.100.9")), Some(64500));
        assert_eq!(t.lookup(ip("192.0.2.1")), None);
    }

    #[test]
    fn a_bad_table_line_is_named() {
        let e = AsTable::parse("198.51.100.0\t24\t64500\n198.51.100.0 33 1\n").unwrap_err();
        assert!(e.contains("line 2") && e.contains("over 32"), "{e}");
        let e = AsTable::parse("nonsense\n").unwrap_err();
        assert!(e.contains("line 1"), "{e}");
        let e = AsTable::parse("10.0.0.0 8 AS1\n").unwrap_err();
        assert!(e.contains("not an AS number"), "{e}");
        assert!(AsTable::parse("# only comments\n").is_err());
    }

    #[test]
    fn a_client_is_located_by_block_and_as() {
        let t = AsTable::parse(TABLE).unwrap();
        let j = judge(Some(&t));
        assert_eq!(
            j.locate("198.51.100.77".parse().unwrap()),
            Locality {
                block: Some("198.51.100.0/24".into()),
                asn: Some(64500)
            }
        );
        assert_eq!(
            j.locate("2001:db8:aa:bb::1".parse().unwrap())
                .block
                .as_deref(),
            Some("2001:db8:aa::/48")
        );
        // IPv4-mapped IPv6 (a dual-stack socket) counts as IPv4.
        assert_eq!(
            j.locate("::ffff:198.51.100.77".parse().unwrap()),
            j.locate("198.51.100.77".parse().unwrap())
        );
        let tag = j.locate("198.51.100.77".parse().unwrap()).tag();
        assert_eq!(tag, "198.51.100.0/24|64500");
        assert_eq!(
            Locality::from_tag(&tag),
            j.locate("198.51.100.77".parse().unwrap())
        );
        assert_eq!(Locality::from_tag("|"), Locality::default());
        assert_eq!(Locality::from_tag("garbage"), Locality::default());
    }

    #[test]
    fn the_closest_come_first_after_the_random_places() {
        let here = Locality {
            block: Some("198.51.100.0/24".into()),
            asn: Some(64500),
        };
        let same_as = Locality {
            block: Some("198.51.101.0/24".into()),
            asn: Some(64500),
        };
        let far = Locality {
            block: Some("203.0.113.0/24".into()),
            asn: Some(64502),
        };
        // 2 in the block, 3 in the AS, 20 far away.
        let mut room: Vec<(u32, Locality)> = Vec::new();
        room.extend((0..2).map(|i| (i, here.clone())));
        room.extend((10..13).map(|i| (i, same_as.clone())));
        room.extend((100..120).map(|i| (i, far.clone())));
        let mut rng = StdRng::seed_from_u64(7);
        for _ in 0..50 {
            // No random places: exactly the closest five, then far ones.
            let s = sample(&here, &room, 8, 0, &mut rng);
            assert_eq!(s.len(), 8);
            let mut first: Vec<u32> = s[..5].to_vec();
            first.sort_unstable();
            assert_eq!(first, [0, 1, 10, 11, 12]);
            assert!(s[..2].iter().all(|k| *k < 2), "the block first: {s:?}");
            assert!(s[5..].iter().all(|k| *k >= 100));
        }
        // With random places, the far ones still get in now and then.
        let mut far_seen = 0;
        for _ in 0..200 {
            let s = sample(&here, &room, 5, 2, &mut rng);
            let mut unique = s.clone();
            unique.sort_unstable();
            unique.dedup();
            assert_eq!(unique.len(), 5, "no peer twice: {s:?}");
            far_seen += s.iter().filter(|k| **k >= 100).count();
        }
        assert!(
            far_seen > 100,
            "random places draw from the whole room: {far_seen}"
        );
    }

    #[test]
    fn a_small_room_is_offered_whole() {
        let room = [(1u32, Locality::default()), (2, Locality::default())];
        let mut rng = StdRng::seed_from_u64(1);
        let mut s = sample(&Locality::default(), &room, 20, 5, &mut rng);
        s.sort_unstable();
        assert_eq!(s, [1, 2]);
    }

    #[test]
    fn random_places_keep_at_least_one() {
        assert_eq!(random_places(20, 0.25), 5);
        assert_eq!(random_places(3, 0.1), 1);
        assert_eq!(random_places(1, 0.5), 1);
        assert_eq!(random_places(20, 0.0), 0);
        assert_eq!(random_places(20, 1.0), 20);
    }
}
