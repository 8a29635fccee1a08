//! Finds the repository's `tests/vectors` and decodes its content specs. A missing vectors
//! folder fails the test run; it never skips.

use std::path::PathBuf;

/// `$PPSPP_VECTORS_DIR`, else the repository's own `tests/vectors`.
pub fn vectors_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("PPSPP_VECTORS_DIR") {
        return PathBuf::from(dir);
    }
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors");
    assert!(
        dir.is_dir(),
        "test vectors not found at {} (set PPSPP_VECTORS_DIR)",
        dir.display()
    );
    dir
}

pub fn read_vector_file(name: &str) -> Vec<u8> {
    let path = vectors_dir().join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

pub fn load_json(name: &str) -> serde_json::Value {
    serde_json::from_slice(&read_vector_file(name))
        .unwrap_or_else(|e| panic!("parsing {name}: {e}"))
}

/// Decodes a content spec of `ppspp-vectors.json`: `ascii:TEXT` (with `\n` escapes),
/// `repeat:C:N`, `pattern:i%M:N` (byte i = i mod M) or `file:NAME`.
pub fn content(spec: &str) -> Vec<u8> {
    let (kind, rest) = spec.split_once(':').expect("content spec has a kind");
    match kind {
        "ascii" => rest.replace("\\n", "\n").into_bytes(),
        "repeat" => {
            let (ch, n) = rest.rsplit_once(':').expect("repeat:C:N");
            let ch = if ch == "\\u0000" { "\0" } else { ch };
            let byte = ch.as_bytes();
            assert_eq!(byte.len(), 1, "repeat takes one byte: {spec}");
            vec![byte[0]; n.parse().expect("repeat count")]
        }
        "pattern" => {
            let (m, n) = rest.split_once(':').expect("pattern:i%M:N");
            let m: usize = m.strip_prefix("i%").expect("i%M").parse().expect("modulus");
            let n: usize = n.parse().expect("length");
            (0..n).map(|i| (i % m) as u8).collect()
        }
        "file" => read_vector_file(rest),
        other => panic!("unknown content kind {other:?} in {spec}"),
    }
}

/// Hex with optional spaces (the vectors separate fields with spaces for reading).
pub fn unhex(s: &str) -> Vec<u8> {
    let compact: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    hex::decode(compact).unwrap_or_else(|e| panic!("bad hex {s:?}: {e}"))
}

/// One UDP datagram of a capture in `tests/vectors`: seconds since the first, ports and
/// payload.
pub struct Captured {
    pub t: f64,
    pub src_port: u16,
    pub dst_port: u16,
    pub payload: Vec<u8>,
}

/// The UDP datagrams of a classic pcap file of Ethernet frames carrying IPv4 (how the
/// libswift sessions were recorded on loopback).
pub fn read_pcap(name: &str) -> Vec<Captured> {
    let bytes = read_vector_file(name);
    let u16be = |b: &[u8], i: usize| u16::from_be_bytes([b[i], b[i + 1]]);
    let u32le = |b: &[u8], i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    assert_eq!(
        u32le(&bytes, 0),
        0xa1b2_c3d4,
        "{name}: not a microsecond pcap"
    );
    assert_eq!(u32le(&bytes, 20), 1, "{name}: not Ethernet frames");
    let mut out = Vec::new();
    let mut at = 24;
    let mut t0 = None;
    while at + 16 <= bytes.len() {
        let t = f64::from(u32le(&bytes, at)) + f64::from(u32le(&bytes, at + 4)) / 1e6;
        let len = u32le(&bytes, at + 8) as usize;
        let frame = &bytes[at + 16..at + 16 + len];
        at += 16 + len;
        let ip = &frame[14..];
        let udp = &ip[usize::from(ip[0] & 0x0f) * 4..];
        let t0 = *t0.get_or_insert(t);
        out.push(Captured {
            t: t - t0,
            src_port: u16be(udp, 0),
            dst_port: u16be(udp, 2),
            payload: udp[8..usize::from(u16be(udp, 4))].to_vec(),
        });
    }
    out
}
