//! The text forms a live presentation's manifest gives its signed records' fields
//! (docs/FORMATS.md, the live manifest): NTP stamps as 16 hex digits (a page's JSON
//! numbers hold 53 bits), hashes and signatures in hex. The source writes them and pages
//! read them; both go through here so they read the same.

use super::munro::SignedMunro;
use crate::Bin;
use crate::merkle::{Hash, HashAlgorithm};
use core::fmt;

/// A field whose text is not what it should be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextFieldError {
    /// Which field (`part signedAt`, `munro hash`, …).
    pub field: &'static str,
    /// Its text.
    pub text: String,
    /// What it should be.
    pub want: &'static str,
}

impl fmt::Display for TextFieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {:?} is not {}", self.field, self.text, self.want)
    }
}

impl core::error::Error for TextFieldError {}

fn bad(field: &'static str, text: &str, want: &'static str) -> TextFieldError {
    TextFieldError {
        field,
        text: text.chars().take(80).collect(),
        want,
    }
}

/// An NTP timestamp as the manifest writes it.
pub fn ntp_to_hex(ntp: u64) -> String {
    format!("{ntp:016x}")
}

/// An NTP timestamp from its hex text.
pub fn ntp_from_hex(field: &'static str, text: &str) -> Result<u64, TextFieldError> {
    if text.is_empty() || text.len() > 16 {
        return Err(bad(field, text, "a hex timestamp"));
    }
    u64::from_str_radix(text, 16).map_err(|_| bad(field, text, "a hex timestamp"))
}

/// Bytes (a signature) from their hex text.
pub fn bytes_from_hex(field: &'static str, text: &str) -> Result<Vec<u8>, TextFieldError> {
    crate::hex::decode(text).ok_or_else(|| bad(field, text, "hex"))
}

/// A hash of `alg` from its hex text.
pub fn hash_from_hex(
    field: &'static str,
    text: &str,
    alg: HashAlgorithm,
) -> Result<Hash, TextFieldError> {
    Hash::from_hex(text)
        .filter(|h| h.len() == alg.size())
        .ok_or_else(|| bad(field, text, "a hash of the rendition's hash function"))
}

/// A signed munro from its manifest entry's fields.
pub fn munro_from_text(
    bin: u64,
    signed_at: &str,
    hash: &str,
    signature: &str,
    alg: HashAlgorithm,
) -> Result<SignedMunro, TextFieldError> {
    Ok(SignedMunro {
        bin: Bin::from_raw(bin),
        timestamp: ntp_from_hex("munro signedAt", signed_at)?,
        hash: hash_from_hex("munro hash", hash, alg)?,
        signature: bytes_from_hex("munro signature", signature)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_round_trip_and_bad_text_is_named() {
        for n in [0, 1, 0xeb0b_5e3a_1c2d_0a7f, u64::MAX] {
            assert_eq!(ntp_from_hex("x", &ntp_to_hex(n)), Ok(n));
        }
        let e = ntp_from_hex("part signedAt", "12345678901234567").unwrap_err();
        assert_eq!(e.field, "part signedAt");
        assert!(ntp_from_hex("x", "").is_err());
        assert!(ntp_from_hex("x", "zz").is_err());
        assert!(bytes_from_hex("x", "abc").is_err());
        let h = HashAlgorithm::Sha256.digest(b"a");
        assert_eq!(
            hash_from_hex("x", &h.to_hex(), HashAlgorithm::Sha256),
            Ok(h)
        );
        assert!(hash_from_hex("x", &h.to_hex(), HashAlgorithm::Sha1).is_err());
        let m = munro_from_text(31, "01", &h.to_hex(), "00ff", HashAlgorithm::Sha256).unwrap();
        assert_eq!(
            (m.bin.raw(), m.timestamp, m.signature),
            (31, 1, vec![0, 255])
        );
    }
}
