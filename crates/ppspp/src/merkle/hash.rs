//! Hash functions of PPSPP's Merkle Hash Tree function option (handshake option 4) and a
//! fixed-capacity hash value.

use core::fmt;
use core::str::FromStr;

use sha1::Digest;

/// The largest hash any [`HashAlgorithm`] produces (SHA-512).
pub const MAX_HASH_SIZE: usize = 64;

/// The hash function of a swarm's Merkle tree (RFC 7574 §7.5, option 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum HashAlgorithm {
    /// SHA-1, 20 bytes: the protocol default.
    #[default]
    Sha1,
    /// SHA-224, 28 bytes.
    Sha224,
    /// SHA-256, 32 bytes.
    Sha256,
    /// SHA-384, 48 bytes.
    Sha384,
    /// SHA-512, 64 bytes.
    Sha512,
}

impl HashAlgorithm {
    /// Every algorithm, in wire-code order.
    pub const ALL: [HashAlgorithm; 5] = [
        HashAlgorithm::Sha1,
        HashAlgorithm::Sha224,
        HashAlgorithm::Sha256,
        HashAlgorithm::Sha384,
        HashAlgorithm::Sha512,
    ];

    /// Digest size in bytes.
    pub const fn size(self) -> usize {
        match self {
            HashAlgorithm::Sha1 => 20,
            HashAlgorithm::Sha224 => 28,
            HashAlgorithm::Sha256 => 32,
            HashAlgorithm::Sha384 => 48,
            HashAlgorithm::Sha512 => 64,
        }
    }

    /// The value of handshake option 4 naming this function.
    pub const fn wire_code(self) -> u8 {
        match self {
            HashAlgorithm::Sha1 => 0,
            HashAlgorithm::Sha224 => 1,
            HashAlgorithm::Sha256 => 2,
            HashAlgorithm::Sha384 => 3,
            HashAlgorithm::Sha512 => 4,
        }
    }

    /// The function named by a handshake option 4 value, `None` for unassigned codes.
    pub const fn from_wire_code(code: u8) -> Option<HashAlgorithm> {
        match code {
            0 => Some(HashAlgorithm::Sha1),
            1 => Some(HashAlgorithm::Sha224),
            2 => Some(HashAlgorithm::Sha256),
            3 => Some(HashAlgorithm::Sha384),
            4 => Some(HashAlgorithm::Sha512),
            _ => None,
        }
    }

    /// Lower-case name, as accepted by [`FromStr`] and printed by [`Display`](fmt::Display).
    pub const fn name(self) -> &'static str {
        match self {
            HashAlgorithm::Sha1 => "sha1",
            HashAlgorithm::Sha224 => "sha224",
            HashAlgorithm::Sha256 => "sha256",
            HashAlgorithm::Sha384 => "sha384",
            HashAlgorithm::Sha512 => "sha512",
        }
    }

    /// The hash of `data` (a leaf: one chunk at its real length).
    pub fn digest(self, data: &[u8]) -> Hash {
        self.digest_parts(&[data])
    }

    /// The parent of two nodes: all-zero when both children are all-zero (padding beyond
    /// the content), otherwise `H(left ‖ right)`.
    pub fn parent(self, left: &Hash, right: &Hash) -> Hash {
        if left.is_zero() && right.is_zero() {
            Hash::zero(self)
        } else {
            self.digest_parts(&[left.as_bytes(), right.as_bytes()])
        }
    }

    /// The hash of the concatenation of `parts`.
    fn digest_parts(self, parts: &[&[u8]]) -> Hash {
        fn run<D: Digest>(parts: &[&[u8]]) -> Hash {
            let mut d = D::new();
            for p in parts {
                d.update(p);
            }
            Hash::from_exact(&d.finalize())
        }
        match self {
            HashAlgorithm::Sha1 => run::<sha1::Sha1>(parts),
            HashAlgorithm::Sha224 => run::<sha2::Sha224>(parts),
            HashAlgorithm::Sha256 => run::<sha2::Sha256>(parts),
            HashAlgorithm::Sha384 => run::<sha2::Sha384>(parts),
            HashAlgorithm::Sha512 => run::<sha2::Sha512>(parts),
        }
    }
}

impl fmt::Display for HashAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// [`HashAlgorithm::from_str`] did not recognise the name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseHashAlgorithmError;

impl fmt::Display for ParseHashAlgorithmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("unknown hash algorithm (expected sha1, sha224, sha256, sha384 or sha512)")
    }
}

impl core::error::Error for ParseHashAlgorithmError {}

impl FromStr for HashAlgorithm {
    type Err = ParseHashAlgorithmError;

    /// Accepts `sha1`, `sha224`, `sha256`, `sha384`, `sha512`, case-insensitively and with
    /// an optional dash (`SHA-256`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        HashAlgorithm::ALL
            .into_iter()
            .find(|alg| {
                let name = alg.name();
                s.eq_ignore_ascii_case(name)
                    || (s.len() == name.len() + 1
                        && s.get(..3).is_some_and(|p| p.eq_ignore_ascii_case("sha"))
                        && s.get(3..4) == Some("-")
                        && s.get(4..) == Some(&name[3..]))
            })
            .ok_or(ParseHashAlgorithmError)
    }
}

/// One hash value of 1 to 64 bytes, stored inline (no heap allocation).
///
/// Bytes past `len` are always zero, so the derived equality and hashing are exact.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Hash {
    bytes: [u8; MAX_HASH_SIZE],
    len: u8,
}

impl Hash {
    /// A hash with these bytes; `None` if `bytes` is empty or longer than 64.
    pub fn from_slice(bytes: &[u8]) -> Option<Hash> {
        if bytes.is_empty() || bytes.len() > MAX_HASH_SIZE {
            return None;
        }
        Some(Hash::from_exact(bytes))
    }

    /// `bytes` must be 1..=64 long (checked by callers).
    fn from_exact(bytes: &[u8]) -> Hash {
        let mut out = [0u8; MAX_HASH_SIZE];
        out[..bytes.len()].copy_from_slice(bytes);
        Hash {
            bytes: out,
            len: bytes.len() as u8,
        }
    }

    /// The all-zero hash of `alg`'s size: the value of padding nodes.
    pub fn zero(alg: HashAlgorithm) -> Hash {
        Hash {
            bytes: [0; MAX_HASH_SIZE],
            len: alg.size() as u8,
        }
    }

    /// The hash bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// Length in bytes.
    #[allow(clippy::len_without_is_empty)] // never empty
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// True if every byte is zero.
    pub fn is_zero(&self) -> bool {
        self.as_bytes().iter().all(|&b| b == 0)
    }

    /// Lower-case hex.
    pub fn to_hex(&self) -> String {
        self.to_string()
    }

    /// Parses hex (either case) of 1 to 64 bytes.
    pub fn from_hex(s: &str) -> Option<Hash> {
        let s = s.as_bytes();
        if !s.len().is_multiple_of(2) || s.len() > 2 * MAX_HASH_SIZE {
            return None;
        }
        fn nibble(c: u8) -> Option<u8> {
            match c {
                b'0'..=b'9' => Some(c - b'0'),
                b'a'..=b'f' => Some(c - b'a' + 10),
                b'A'..=b'F' => Some(c - b'A' + 10),
                _ => None,
            }
        }
        let mut buf = [0u8; MAX_HASH_SIZE];
        for (i, pair) in s.chunks_exact(2).enumerate() {
            buf[i] = (nibble(pair[0])? << 4) | nibble(pair[1])?;
        }
        Hash::from_slice(&buf[..s.len() / 2])
    }
}

impl AsRef<[u8]> for Hash {
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl fmt::Display for Hash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.as_bytes() {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Hash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Hash({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_codes_and_names() {
        for (i, alg) in HashAlgorithm::ALL.into_iter().enumerate() {
            assert_eq!(alg.wire_code() as usize, i);
            assert_eq!(HashAlgorithm::from_wire_code(i as u8), Some(alg));
            assert_eq!(alg.digest(b"x").len(), alg.size());
            assert_eq!(alg.to_string().parse::<HashAlgorithm>(), Ok(alg));
            assert_eq!(alg.name().to_uppercase().parse::<HashAlgorithm>(), Ok(alg));
            let dashed = format!("SHA-{}", &alg.name()[3..]);
            assert_eq!(dashed.parse::<HashAlgorithm>(), Ok(alg));
        }
        assert_eq!(HashAlgorithm::from_wire_code(5), None);
        assert_eq!(HashAlgorithm::from_wire_code(255), None);
        assert!("md5".parse::<HashAlgorithm>().is_err());
        assert!("sha".parse::<HashAlgorithm>().is_err());
        assert!("sha-".parse::<HashAlgorithm>().is_err());
        assert!("sha2566".parse::<HashAlgorithm>().is_err());
        assert_eq!(HashAlgorithm::default(), HashAlgorithm::Sha1);
    }

    #[test]
    fn known_digests() {
        assert_eq!(
            HashAlgorithm::Sha1.digest(b"abc").to_hex(),
            "a9993e364706816aba3e25717850c26c9cd0d89d"
        );
        assert_eq!(
            HashAlgorithm::Sha256.digest(b"abc").to_hex(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            HashAlgorithm::Sha224.digest(b"abc").to_hex(),
            "23097d223405d8228642a477bda255b32aadbce4bda0b3f7e36c9da7"
        );
        assert!(
            HashAlgorithm::Sha384
                .digest(b"abc")
                .to_hex()
                .starts_with("cb00753f")
        );
        assert!(
            HashAlgorithm::Sha512
                .digest(b"abc")
                .to_hex()
                .starts_with("ddaf35a1")
        );
    }

    #[test]
    fn zero_rule() {
        let alg = HashAlgorithm::Sha1;
        let z = Hash::zero(alg);
        assert!(z.is_zero());
        assert_eq!(alg.parent(&z, &z), z);
        // The pitfall: H(0^40) is not zero, so the rule must be explicit.
        assert_eq!(
            alg.digest(&[0u8; 40]).to_hex(),
            "b80de5d138758541c5f05265ad144ab9fa86d1db"
        );
        let a = alg.digest(b"a");
        let mut cat = a.as_bytes().to_vec();
        cat.extend_from_slice(z.as_bytes());
        assert_eq!(alg.parent(&a, &z), alg.digest(&cat));
    }

    #[test]
    fn hex_round_trip_and_limits() {
        let h = HashAlgorithm::Sha512.digest(b"abc");
        assert_eq!(Hash::from_hex(&h.to_hex()), Some(h));
        assert_eq!(Hash::from_hex(&h.to_hex().to_uppercase()), Some(h));
        assert_eq!(format!("{h:?}"), format!("Hash({h})"));
        assert_eq!(Hash::from_hex(""), None);
        assert_eq!(Hash::from_hex("abc"), None);
        assert_eq!(Hash::from_hex("zz"), None);
        assert_eq!(Hash::from_hex(&"00".repeat(65)), None);
        assert_eq!(Hash::from_slice(&[]), None);
        assert_eq!(Hash::from_slice(&[1; 65]), None);
        assert_eq!(Hash::from_slice(&[1; 20]).map(|h| h.len()), Some(20));
        // Same bytes, different length: different hashes.
        assert_ne!(Hash::from_slice(&[0; 20]), Hash::from_slice(&[0; 32]));
    }
}
