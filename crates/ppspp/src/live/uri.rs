//! Live swarm URIs: a live stream's source key, how it is cut and signed, and where its
//! peers meet.
//!
//! ```text
//! ppspp://live/<key-hex>[?cs=<chunk size>][&hash=<sha1|…|sha512>][&sig=<chunks per signature>]
//!                       [&window=<chunks>][&signal=<ws or wss URL>][&udp=<host:port>]…
//!                       [&init=<hex>]
//! ```
//!
//! The key is the swarm ID in hex: the source's public key in DNSKEY form (its DNSSEC
//! algorithm number, then the key: `0d` and 64 bytes for ECDSA P-256, `0f` and 32 for
//! Ed25519). `cs` (default 1024) and `hash` (default SHA-1) are as for files; `sig` is the
//! number of chunks under one signed munro (a power of two from 2 to 65536, default 32,
//! libswift's), or 1 for a signature on every chunk (Sign All); `window` is the discard window the source keeps, in chunks (default
//! 4096), which viewers take as theirs unless told otherwise. `signal` and `udp` are as
//! for files. `init` is the media's initialisation segment (WebM header and Tracks, or
//! MP4 `ftyp` and `moov`), which a viewer joining at any point needs before the stream's
//! media segments: it travels in the URI, which viewers trust as they trust its key, so it
//! needs no swarm of its own and no signature. Unknown parameters are ignored.

use super::key::LivePublicKey;
use super::params::{LiveInfo, LiveParams};
use crate::merkle::HashAlgorithm;
use crate::uri::{
    DEFAULT_CHUNK_SIZE, UriError, bad, parse_chunk_size, parse_hash, parse_signal, parse_udp,
    percent_decode, percent_encode,
};
use core::fmt;
use core::str::FromStr;

/// libswift's chunks per signature.
pub const DEFAULT_CHUNKS_PER_SIGNATURE: u64 = 32;
/// The discard window when a URI names none, in chunks.
pub const DEFAULT_DISCARD_WINDOW: u64 = 4096;

/// A parsed live swarm URI.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveUri {
    /// The source's public key and how the stream is cut and signed.
    pub info: LiveInfo,
    /// The signaling server (`signal`), if any.
    pub signal: Option<String>,
    /// Native UDP peers as `host:port` (`udp`, repeatable).
    pub udp: Vec<String>,
    /// The media's initialisation segment (`init`, hex): what a viewer joining at any
    /// point appends before the stream's media segments.
    pub init: Option<Vec<u8>>,
}

impl LiveUri {
    /// The URI of a stream with no peers named yet.
    pub fn new(info: LiveInfo) -> LiveUri {
        LiveUri {
            info,
            signal: None,
            udp: Vec::new(),
            init: None,
        }
    }
}

impl FromStr for LiveUri {
    type Err = UriError;

    fn from_str(s: &str) -> Result<LiveUri, UriError> {
        let rest = s.trim().strip_prefix("ppspp://").ok_or(UriError::Scheme)?;
        let rest = rest
            .strip_prefix("live/")
            .ok_or_else(|| UriError::Key("a live URI is ppspp://live/<key>".into()))?;
        let (key_hex, query) = rest.split_once('?').unwrap_or((rest, ""));
        let key_bytes = crate::hex::decode(key_hex.trim_end_matches('/'))
            .ok_or_else(|| UriError::Key("not hexadecimal".into()))?;
        let key =
            LivePublicKey::from_swarm_id(&key_bytes).map_err(|e| UriError::Key(e.to_string()))?;
        let mut params = LiveParams {
            hash: HashAlgorithm::Sha1,
            chunk_size: DEFAULT_CHUNK_SIZE,
            chunks_per_signature: DEFAULT_CHUNKS_PER_SIGNATURE,
            discard_window: DEFAULT_DISCARD_WINDOW,
        };
        let (mut signal, mut udp, mut init) = (None, Vec::new(), None);
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (name, raw) = pair.split_once('=').unwrap_or((pair, ""));
            let value = percent_decode(raw).ok_or_else(|| bad(name, "bad percent-encoding"))?;
            match name {
                "cs" => params.chunk_size = parse_chunk_size(&value)?,
                "hash" => params.hash = parse_hash(&value)?,
                "sig" => {
                    let n: u64 = value
                        .parse()
                        .map_err(|_| bad("sig", "not a whole number of chunks"))?;
                    if !(1..=crate::live::umt::MAX_CHUNKS_PER_SIGNATURE).contains(&n)
                        || !n.is_power_of_two()
                    {
                        return Err(bad(
                            "sig",
                            "must be 1 (every chunk signed) or a power of two up to 65536",
                        ));
                    }
                    params.chunks_per_signature = n;
                }
                "window" => {
                    let n: u64 = value
                        .parse()
                        .map_err(|_| bad("window", "not a whole number of chunks"))?;
                    if n == 0 {
                        return Err(bad("window", "must hold at least one chunk"));
                    }
                    params.discard_window = n;
                }
                "signal" => signal = Some(parse_signal(value)?),
                "udp" => udp.push(parse_udp(value)?),
                "init" => {
                    let bytes = crate::hex::decode(&value)
                        .filter(|b| !b.is_empty())
                        .ok_or_else(|| bad("init", "not hexadecimal"))?;
                    init = Some(bytes);
                }
                _ => {}
            }
        }
        Ok(LiveUri {
            info: LiveInfo { key, params },
            signal,
            udp,
            init,
        })
    }
}

impl fmt::Display for LiveUri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = &self.info.params;
        write!(
            f,
            "ppspp://live/{}",
            crate::hex::encode(self.info.key.swarm_id())
        )?;
        let mut sep = '?';
        let mut param = |f: &mut fmt::Formatter<'_>, name: &str, value: String| {
            let r = write!(f, "{sep}{name}={value}");
            sep = '&';
            r
        };
        if p.chunk_size != DEFAULT_CHUNK_SIZE {
            param(f, "cs", p.chunk_size.to_string())?;
        }
        if p.hash != HashAlgorithm::Sha1 {
            param(f, "hash", p.hash.to_string())?;
        }
        if p.chunks_per_signature != DEFAULT_CHUNKS_PER_SIGNATURE {
            param(f, "sig", p.chunks_per_signature.to_string())?;
        }
        if p.discard_window != DEFAULT_DISCARD_WINDOW {
            param(f, "window", p.discard_window.to_string())?;
        }
        if let Some(s) = &self.signal {
            param(f, "signal", percent_encode(s))?;
        }
        for u in &self.udp {
            param(f, "udp", percent_encode(u))?;
        }
        if let Some(init) = &self.init {
            param(f, "init", crate::hex::encode(init))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::{LiveAlgorithm, LiveSigningKey};
    use crate::uri::SwarmUri;

    fn key(alg: LiveAlgorithm) -> LivePublicKey {
        LiveSigningKey::from_secret(alg, &[5; 32])
            .unwrap()
            .public_key()
            .clone()
    }

    #[test]
    fn minimal_and_full_round_trip() {
        for alg in [LiveAlgorithm::EcdsaP256Sha256, LiveAlgorithm::Ed25519] {
            let k = key(alg);
            let text = format!("ppspp://live/{}", crate::hex::encode(k.swarm_id()));
            let u: LiveUri = text.parse().unwrap();
            assert_eq!(u.info.key, k);
            assert_eq!(u.info.params.chunks_per_signature, 32);
            assert_eq!(u.info.params.discard_window, 4096);
            assert_eq!(u.to_string(), text);
            let sign_all: LiveUri = format!("{text}?sig=1").parse().unwrap();
            assert!(sign_all.info.params.signs_every_chunk());
            assert_eq!(sign_all.to_string(), format!("{text}?sig=1"));
            let full = LiveUri {
                info: LiveInfo {
                    key: k.clone(),
                    params: LiveParams {
                        hash: HashAlgorithm::Sha256,
                        chunk_size: 8192,
                        chunks_per_signature: 16,
                        discard_window: 600,
                    },
                },
                signal: Some("ws://127.0.0.1:8787/ws?x=1".into()),
                udp: vec!["127.0.0.1:7000".into()],
                init: Some(vec![0x1a, 0x45, 0xdf, 0xa3, 0]),
            };
            assert_eq!(full.to_string().parse::<LiveUri>().unwrap(), full);
        }
    }

    #[test]
    fn bad_live_uris_say_why() {
        let k = crate::hex::encode(key(LiveAlgorithm::Ed25519).swarm_id());
        for (text, why) in [
            ("ppspp://live/zz".to_string(), "hexadecimal"),
            ("ppspp://live/0f00".to_string(), "32"),
            ("ppspp://live/0500".to_string(), "algorithm"),
            (format!("ppspp://live/{k}?sig=3"), "power of two"),
            (format!("ppspp://live/{k}?sig=0"), "power of two"),
            (format!("ppspp://live/{k}?window=0"), "at least one"),
            (format!("ppspp://live/{k}?cs=0"), "1 to"),
            (format!("ppspp://live/{k}?signal=http://x"), "ws://"),
            (format!("ppspp://live/{k}?init=1"), "hexadecimal"),
        ] {
            let e = text.parse::<LiveUri>().unwrap_err().to_string();
            assert!(e.contains(why), "{text}: {e}");
        }
        // A file's parser names a live URI for what it is.
        let e = format!("ppspp://live/{k}").parse::<SwarmUri>().unwrap_err();
        assert_eq!(e, UriError::LiveStream);
    }
}
