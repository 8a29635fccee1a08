//! Live streams (RFC 7574 §6.1; digest §2.4): the source's key, whose DNSKEY form is the
//! swarm ID, signed munros, and the Unified Merkle Tree, which make every chunk's origin
//! checkable as the stream grows; or, simpler and costlier, a signature on every chunk
//! (Sign All).

pub mod key;
pub mod munro;
pub mod params;
pub mod presentation;
pub mod segment;
pub mod session;
pub mod text_fields;
pub mod umt;
pub mod uri;

pub use key::{KeyError, LiveAlgorithm, LivePublicKey, LiveSigningKey};
pub use munro::{SignedMunro, SpecFormat, signed_bytes, signed_chunk_bytes};
pub use params::{LIVE_CHUNKS, LiveInfo, LiveParams, ntp_from_unix_micros, unix_micros_from_ntp};
pub use presentation::{InitSegment, LivePart, LiveRendition};
pub use umt::{LiveError, LiveSource, LiveVerifier, SIGN_ALL, SignedWithin};
pub use uri::LiveUri;
