//! Lower-case hex for byte strings in URIs and key files.

/// `bytes` as lower-case hex.
pub fn encode(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The bytes of hex `s` (either case), or `None` if it is not hex.
pub fn decode(s: &str) -> Option<Vec<u8>> {
    // Checked first: `from_str_radix` takes a sign.
    if !s.len().is_multiple_of(2) || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn round_trip_and_refusals() {
        assert_eq!(super::encode(&[0, 0xAB, 7]), "00ab07");
        assert_eq!(super::decode("00AB07"), Some(vec![0, 0xAB, 7]));
        for bad in ["0", "zz", "+1", "0g"] {
            assert_eq!(super::decode(bad), None, "{bad}");
        }
    }
}
