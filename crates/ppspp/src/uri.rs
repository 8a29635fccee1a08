//! Swarm URIs: everything a peer needs to join a swarm, in one string.
//!
//! ```text
//! ppspp://<root-hex>?len=<bytes>[&cs=<chunk size>][&hash=<sha1|sha224|sha256|sha384|sha512>]
//!                   [&signal=<ws or wss URL>][&udp=<host:port>]…[&name=<file name>]
//!                   [&http=<content URL>&tree=<tree file URL>]
//! ```
//!
//! The root is the Merkle root (the swarm ID), in hex, as long as the hash function's
//! output. `len` is the content length in bytes (required: the engine verifies chunk
//! lengths against it). `cs` defaults to the RFC's 1024 and `hash` to SHA-1. `signal` is
//! the signaling server browsers and native peers meet at; each `udp` names a native peer
//! that speaks plain RFC 7574 over UDP. `http` and `tree`, always together, name an HTTP
//! origin: the content on a web server and its tree file (`ppspp root FILE --tree OUT`,
//! docs/FORMATS.md), absolute `http://` or `https://` URLs, or (for browsers) URLs relative
//! to the page. Values are percent-encoded where needed.
//! Unknown parameters are ignored so later versions can add some.

use crate::content::ContentInfo;
use crate::merkle::{Hash, HashAlgorithm};
use core::fmt;
use core::str::FromStr;

/// The RFC's recommended chunk size.
pub const DEFAULT_CHUNK_SIZE: u32 = 1024;
/// Largest chunk size a URI may name (a chunk must fit one WebRTC message or datagram).
pub const MAX_CHUNK_SIZE: u32 = 1 << 20;

/// A parsed swarm URI.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SwarmUri {
    /// The Merkle root hash, which is also the swarm ID.
    pub root: Hash,
    /// The Merkle hash function (`hash`).
    pub hash: HashAlgorithm,
    /// Chunk size in bytes (`cs`).
    pub chunk_size: u32,
    /// Content length in bytes (`len`).
    pub content_len: u64,
    /// The signaling server's ws or wss URL (`signal`), if any.
    pub signal: Option<String>,
    /// Native UDP peers as `host:port` (`udp`, repeatable), in URI order.
    pub udp: Vec<String>,
    /// A file name to save the content under (`name`), if any.
    pub name: Option<String>,
    /// The HTTP origin (`http` and `tree`), if any.
    pub origin: Option<HttpOriginUrls>,
}

/// Where an HTTP origin serves the content and its tree file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpOriginUrls {
    /// The content's URL (`http`).
    pub content: String,
    /// The tree file's URL (`tree`).
    pub tree: String,
}

/// Why a string is not a usable swarm URI.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UriError {
    /// It does not start with `ppspp://`.
    Scheme,
    /// The root is not hex of the hash function's length.
    Root(String),
    /// `len` is missing.
    MissingLength,
    /// It names a live stream (`ppspp://live/…`), not a file: see
    /// [`LiveUri`](crate::live::LiveUri).
    LiveStream,
    /// The live source's key is not hex of a supported DNSKEY.
    Key(String),
    /// A parameter has a value that cannot be used.
    BadParameter {
        /// The parameter's name.
        name: String,
        /// What is wrong with its value.
        reason: String,
    },
}

impl fmt::Display for UriError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UriError::Scheme => f.write_str("a swarm URI starts with ppspp://"),
            UriError::Root(why) => write!(f, "bad root hash: {why}"),
            UriError::MissingLength => f.write_str("the URI lacks len=<content length in bytes>"),
            UriError::LiveStream => f.write_str("this URI names a live stream, not a file"),
            UriError::Key(why) => write!(f, "bad live source key: {why}"),
            UriError::BadParameter { name, reason } => write!(f, "bad `{name}`: {reason}"),
        }
    }
}

impl std::error::Error for UriError {}

/// `cs`: a chunk size from 1 byte to [`MAX_CHUNK_SIZE`].
pub(crate) fn parse_chunk_size(value: &str) -> Result<u32, UriError> {
    let n: u32 = value
        .parse()
        .map_err(|_| bad("cs", "not a whole number of bytes"))?;
    if n == 0 || n > MAX_CHUNK_SIZE {
        return Err(bad("cs", format!("must be 1 to {MAX_CHUNK_SIZE}")));
    }
    Ok(n)
}

/// `hash`: a Merkle hash function's name.
pub(crate) fn parse_hash(value: &str) -> Result<HashAlgorithm, UriError> {
    value
        .parse()
        .map_err(|_| bad("hash", format!("unknown hash function {value:?}")))
}

/// `signal`: a ws:// or wss:// URL.
pub(crate) fn parse_signal(value: String) -> Result<String, UriError> {
    if !(value.starts_with("ws://") || value.starts_with("wss://")) {
        return Err(bad("signal", "must be a ws:// or wss:// URL"));
    }
    Ok(value)
}

/// `udp`: host:port.
pub(crate) fn parse_udp(value: String) -> Result<String, UriError> {
    if value
        .rsplit_once(':')
        .is_none_or(|(h, p)| h.is_empty() || p.parse::<u16>().is_err())
    {
        return Err(bad("udp", format!("{value:?} is not host:port")));
    }
    Ok(value)
}

pub(crate) fn bad(name: &str, reason: impl Into<String>) -> UriError {
    UriError::BadParameter {
        name: name.into(),
        reason: reason.into(),
    }
}

impl SwarmUri {
    /// The URI of content with this metadata and no peers named yet.
    pub fn new(content: &ContentInfo) -> SwarmUri {
        SwarmUri {
            root: content.root,
            hash: content.hash,
            chunk_size: content.chunk_size,
            content_len: content.content_len,
            signal: None,
            udp: Vec::new(),
            name: None,
            origin: None,
        }
    }

    /// The metadata the engine needs.
    pub fn content(&self) -> ContentInfo {
        ContentInfo {
            root: self.root,
            hash: self.hash,
            chunk_size: self.chunk_size,
            content_len: self.content_len,
        }
    }
}

impl FromStr for SwarmUri {
    type Err = UriError;

    fn from_str(s: &str) -> Result<SwarmUri, UriError> {
        let rest = s.trim().strip_prefix("ppspp://").ok_or(UriError::Scheme)?;
        if rest.starts_with("live/") {
            return Err(UriError::LiveStream);
        }
        let (root_hex, query) = rest.split_once('?').unwrap_or((rest, ""));
        let root_hex = root_hex.trim_end_matches('/');
        let mut uri = SwarmUri {
            root: Hash::zero(HashAlgorithm::Sha1),
            hash: HashAlgorithm::Sha1,
            chunk_size: DEFAULT_CHUNK_SIZE,
            content_len: 0,
            signal: None,
            udp: Vec::new(),
            name: None,
            origin: None,
        };
        let mut len = None;
        let (mut http, mut tree) = (None, None);
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, raw) = pair.split_once('=').unwrap_or((pair, ""));
            let value = percent_decode(raw).ok_or_else(|| bad(key, "bad percent-encoding"))?;
            match key {
                "len" => {
                    let n: u64 = value
                        .parse()
                        .map_err(|_| bad("len", "not a whole number of bytes"))?;
                    if n == 0 {
                        return Err(bad("len", "content is empty"));
                    }
                    len = Some(n);
                }
                "cs" => uri.chunk_size = parse_chunk_size(&value)?,
                "hash" => uri.hash = parse_hash(&value)?,
                "signal" => uri.signal = Some(parse_signal(value)?),
                "udp" => uri.udp.push(parse_udp(value)?),
                "name" => uri.name = Some(value),
                "http" | "tree" => {
                    if value.is_empty() || value.chars().any(char::is_whitespace) {
                        return Err(bad(key, "must be a URL"));
                    }
                    if key == "http" {
                        http = Some(value);
                    } else {
                        tree = Some(value);
                    }
                }
                _ => {}
            }
        }
        uri.origin = match (http, tree) {
            (Some(content), Some(tree)) => Some(HttpOriginUrls { content, tree }),
            (None, None) => None,
            (Some(_), None) => return Err(bad("http", "needs tree= (the content's tree file)")),
            (None, Some(_)) => return Err(bad("tree", "needs http= (the content's URL)")),
        };
        if root_hex.len() != 2 * uri.hash.size() {
            return Err(UriError::Root(format!(
                "{} hex digits, but {} needs {}",
                root_hex.len(),
                uri.hash,
                2 * uri.hash.size()
            )));
        }
        uri.root =
            Hash::from_hex(root_hex).ok_or_else(|| UriError::Root("not hexadecimal".into()))?;
        uri.content_len = len.ok_or(UriError::MissingLength)?;
        Ok(uri)
    }
}

impl fmt::Display for SwarmUri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ppspp://{}?len={}", self.root.to_hex(), self.content_len)?;
        if self.chunk_size != DEFAULT_CHUNK_SIZE {
            write!(f, "&cs={}", self.chunk_size)?;
        }
        if self.hash != HashAlgorithm::Sha1 {
            write!(f, "&hash={}", self.hash)?;
        }
        if let Some(s) = &self.signal {
            write!(f, "&signal={}", percent_encode(s))?;
        }
        for u in &self.udp {
            write!(f, "&udp={}", percent_encode(u))?;
        }
        if let Some(n) = &self.name {
            write!(f, "&name={}", percent_encode(n))?;
        }
        if let Some(o) = &self.origin {
            write!(
                f,
                "&http={}&tree={}",
                percent_encode(&o.content),
                percent_encode(&o.tree)
            )?;
        }
        Ok(())
    }
}

/// Percent-encodes everything but unreserved characters and a few safe in a query value.
pub(crate) fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~:/@!$'()*,;".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Decodes `%XX` escapes (and `+` as a space, as forms do); `None` for a broken escape or
/// invalid UTF-8.
pub(crate) fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = core::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const M74: &str = "c89800bfc82ed01ed6e3bfd5408c51274491f7d4";

    #[test]
    fn minimal_and_full_round_trip() {
        let u: SwarmUri = format!("ppspp://{M74}?len=26121").parse().unwrap();
        assert_eq!(u.root.to_hex(), M74);
        assert_eq!(
            (u.chunk_size, u.hash, u.content_len),
            (1024, HashAlgorithm::Sha1, 26121)
        );
        assert_eq!(u.to_string(), format!("ppspp://{M74}?len=26121"));
        let full = SwarmUri {
            signal: Some("ws://127.0.0.1:8787/ws?room=a&x=1".into()),
            udp: vec!["127.0.0.1:7000".into(), "[::1]:7001".into()],
            name: Some("my video.webm".into()),
            origin: Some(HttpOriginUrls {
                content: "https://cdn.example/v/a-b.webm?sig=1&x=2".into(),
                tree: "a.tree".into(),
            }),
            chunk_size: 8192,
            ..u.clone()
        };
        let text = full.to_string();
        assert!(
            text.contains("signal=ws://127.0.0.1:8787/ws%3Froom%3Da%26x%3D1"),
            "{text}"
        );
        assert_eq!(text.parse::<SwarmUri>().unwrap(), full);
        assert_eq!(full.content().content_len, 26121);
    }

    #[test]
    fn sha256_roots_are_longer() {
        let root = "12d0e382fc4a5a8bfca5c693355872fa69d30304ea01fb1c973dc8bad95ce177";
        let u: SwarmUri = format!("ppspp://{root}?hash=sha256&len=26121")
            .parse()
            .unwrap();
        assert_eq!(u.hash, HashAlgorithm::Sha256);
        assert!(matches!(
            format!("ppspp://{root}?len=26121").parse::<SwarmUri>(),
            Err(UriError::Root(_))
        ));
    }

    #[test]
    fn errors_say_what_is_wrong() {
        let cases = [
            ("http://x", UriError::Scheme),
            (&format!("ppspp://{M74}") as &str, UriError::MissingLength),
            (
                &format!("ppspp://{M74}?len=0"),
                bad("len", "content is empty"),
            ),
            (
                &format!("ppspp://{M74}?len=x"),
                bad("len", "not a whole number of bytes"),
            ),
            (
                &format!("ppspp://{M74}?len=9&cs=0"),
                bad("cs", "must be 1 to 1048576"),
            ),
            (
                &format!("ppspp://{M74}?len=9&hash=md5"),
                bad("hash", "unknown hash function \"md5\""),
            ),
            (
                &format!("ppspp://{M74}?len=9&signal=http://a"),
                bad("signal", "must be a ws:// or wss:// URL"),
            ),
            (
                &format!("ppspp://{M74}?len=9&udp=host"),
                bad("udp", "\"host\" is not host:port"),
            ),
            (
                &format!("ppspp://{M74}?len=9&name=%zz"),
                bad("name", "bad percent-encoding"),
            ),
            (
                &format!("ppspp://{M74}?len=9&http=https://a/v"),
                bad("http", "needs tree= (the content's tree file)"),
            ),
            (
                &format!("ppspp://{M74}?len=9&tree=v.tree"),
                bad("tree", "needs http= (the content's URL)"),
            ),
            (
                &format!("ppspp://{M74}?len=9&http=&tree=v.tree"),
                bad("http", "must be a URL"),
            ),
        ];
        for (text, want) in cases {
            assert_eq!(text.parse::<SwarmUri>(), Err(want), "{text}");
        }
        assert!(matches!(
            "ppspp://zz?len=1".parse::<SwarmUri>(),
            Err(UriError::Root(_))
        ));
        let nonhex = "g".repeat(40);
        assert!(matches!(
            format!("ppspp://{nonhex}?len=1").parse::<SwarmUri>(),
            Err(UriError::Root(_))
        ));
        // Unknown parameters are ignored; every error message reads as a sentence.
        assert!(
            format!("ppspp://{M74}?len=5&future=1")
                .parse::<SwarmUri>()
                .is_ok()
        );
        assert_eq!(
            UriError::MissingLength.to_string(),
            "the URI lacks len=<content length in bytes>"
        );
    }
}
