//! HANDSHAKE protocol options (RFC 7574 §7, digest §1.3) and the supported-messages bitmap.

use super::CodecConfig;
use super::addressing::ChunkAddressing;
use super::error::{DecodeError, EncodeError};
use super::message_type::MessageType;
use super::reader::Reader;

/// Option codes.
pub mod code {
    /// Protocol version the sender speaks (must come first).
    pub const VERSION: u8 = 0;
    /// Lowest protocol version the sender accepts.
    pub const MIN_VERSION: u8 = 1;
    /// Swarm ID: the root hash (static) or the public key (live).
    pub const SWARM_ID: u8 = 2;
    /// Content integrity protection method.
    pub const CONTENT_INTEGRITY: u8 = 3;
    /// Merkle hash function.
    pub const MERKLE_HASH_FUNCTION: u8 = 4;
    /// Live signature algorithm (a DNSSEC algorithm number).
    pub const LIVE_SIGNATURE_ALGORITHM: u8 = 5;
    /// Chunk addressing method.
    pub const CHUNK_ADDRESSING: u8 = 6;
    /// Live discard window: how far back a live peer keeps chunks.
    pub const LIVE_DISCARD_WINDOW: u8 = 7;
    /// Bitmap of the message types the sender supports.
    pub const SUPPORTED_MESSAGES: u8 = 8;
    /// Chunk size in bytes.
    pub const CHUNK_SIZE: u8 = 9;
    /// Ends the option list.
    pub const END: u8 = 0xFF;
}

/// Merkle hash function codes (option 4).
pub mod hash_function {
    /// SHA-1, the default and the one every implementation must support.
    pub const SHA1: u8 = 0;
    /// SHA-224.
    pub const SHA224: u8 = 1;
    /// SHA-256.
    pub const SHA256: u8 = 2;
    /// SHA-384.
    pub const SHA384: u8 = 3;
    /// SHA-512.
    pub const SHA512: u8 = 4;
}

/// Digest length of a Merkle hash function code, or `None` for an unknown code.
pub const fn merkle_hash_size(function: u8) -> Option<usize> {
    match function {
        0 => Some(20),
        1 => Some(28),
        2 => Some(32),
        3 => Some(48),
        4 => Some(64),
        _ => None,
    }
}

/// Signature length of a DNSSEC algorithm whose signatures have a fixed size: ECDSA
/// P-256 (13) 64, ECDSA P-384 (14) 96, Ed25519 (15) 64, Ed448 (16) 114. RSA (5, 8, 10)
/// depends on the key, so `None`.
pub const fn signature_size(algorithm: u8) -> Option<usize> {
    match algorithm {
        13 | 15 => Some(64),
        14 => Some(96),
        16 => Some(114),
        _ => None,
    }
}

/// The "keep everything" live discard window in 32-bit addressing (`u64::MAX` in 64-bit).
pub const LIVE_DISCARD_ALL_32: u64 = 0xFFFF_FFFF;

/// Content integrity protection method (option 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ContentIntegrity {
    /// No integrity protection: chunks are not verified.
    None = 0,
    /// Static content default.
    MerkleTree = 1,
    /// Live: every chunk is signed by the source.
    SignAll = 2,
    /// Live default.
    UnifiedMerkleTree = 3,
}

impl ContentIntegrity {
    /// The method for a handshake option value, or `None` for an unknown code.
    pub const fn from_wire_code(code: u8) -> Option<ContentIntegrity> {
        match code {
            0 => Some(ContentIntegrity::None),
            1 => Some(ContentIntegrity::MerkleTree),
            2 => Some(ContentIntegrity::SignAll),
            3 => Some(ContentIntegrity::UnifiedMerkleTree),
            _ => None,
        }
    }

    /// The handshake option value naming this method.
    pub const fn wire_code(self) -> u8 {
        self as u8
    }
}

/// The set of message types a peer supports (option 8): a 256-bit map indexed by type
/// code, so bits for types this crate does not know survive a round trip.
///
/// On the wire: a length byte, then the bitmap with bit X (MSB first across the bytes)
/// meaning "type X supported", trailing zero bytes trimmed. RFC 7574 §7.10's example,
/// all but ACK and the PEX family, is `08 02 D9 F0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SupportedMessages([u8; 32]);

impl SupportedMessages {
    /// No message type.
    pub const fn empty() -> Self {
        SupportedMessages([0; 32])
    }

    /// Every type RFC 7574 defines (0–13).
    pub fn all() -> Self {
        let mut s = Self::empty();
        for t in MessageType::ALL {
            s.insert(t);
        }
        s
    }

    /// Whether type `t` is in the set.
    pub fn contains(&self, t: MessageType) -> bool {
        self.contains_code(t.code())
    }

    /// Membership by raw type code (also for codes this crate does not know).
    pub fn contains_code(&self, code: u8) -> bool {
        self.0[usize::from(code / 8)] & (0x80 >> (code % 8)) != 0
    }

    /// Adds type `t`.
    pub fn insert(&mut self, t: MessageType) {
        self.insert_code(t.code());
    }

    /// Adds a raw type code (also one this crate does not know).
    pub fn insert_code(&mut self, code: u8) {
        self.0[usize::from(code / 8)] |= 0x80 >> (code % 8);
    }

    /// Removes type `t`.
    pub fn remove(&mut self, t: MessageType) {
        let code = t.code();
        self.0[usize::from(code / 8)] &= !(0x80 >> (code % 8));
    }

    /// True when no type code is in the set.
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&b| b == 0)
    }

    /// The set from a wire bitmap (without its length byte). Bytes past the 32nd must be
    /// zero (no type code is above 255), else `None`.
    pub fn from_bitmap(bitmap: &[u8]) -> Option<Self> {
        let mut s = Self::empty();
        for (i, &byte) in bitmap.iter().enumerate() {
            match s.0.get_mut(i) {
                Some(slot) => *slot = byte,
                None if byte == 0 => {}
                None => return None,
            }
        }
        Some(s)
    }

    /// The wire bitmap with trailing zero bytes trimmed (without its length byte).
    pub fn bitmap(&self) -> &[u8] {
        let len = self.0.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
        self.0.get(..len).unwrap_or(&[])
    }
}

/// The protocol options of a HANDSHAKE. `None` means "not sent".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HandshakeOptions<'a> {
    /// Protocol version the sender speaks (1 is RFC 7574).
    pub version: Option<u8>,
    /// Lowest protocol version the sender accepts.
    pub min_version: Option<u8>,
    /// The swarm ID: the root hash for static content, the public key for live.
    pub swarm_id: Option<&'a [u8]>,
    /// How chunks are checked: Merkle tree, signatures or not at all.
    pub content_integrity: Option<ContentIntegrity>,
    /// A [`hash_function`] code; only 0–4 are accepted (they fix the INTEGRITY length).
    pub merkle_hash_function: Option<u8>,
    /// A DNSSEC algorithm number.
    pub live_signature_algorithm: Option<u8>,
    /// How chunk specs are written in this channel's messages.
    pub chunk_addressing: Option<ChunkAddressing>,
    /// Chunks (bytes with byte64). On the wire 32 bits wide with a 32-bit addressing
    /// method (the one in this option list, else the one in effect), 64 otherwise;
    /// "keep everything" is [`LIVE_DISCARD_ALL_32`] or `u64::MAX`.
    pub live_discard_window: Option<u64>,
    /// The message types the sender supports; absent means all of them.
    pub supported_messages: Option<SupportedMessages>,
    /// Bytes per chunk; `0xFFFFFFFF` means variable-size chunks.
    pub chunk_size: Option<u32>,
}

impl<'a> HandshakeOptions<'a> {
    /// The options the initiator of a static swarm sends: version 1, min version 1,
    /// swarm ID, Merkle tree with SHA-1 and the given chunk addressing.
    pub fn static_swarm(swarm_id: &'a [u8], addressing: ChunkAddressing) -> Self {
        HandshakeOptions {
            version: Some(1),
            min_version: Some(1),
            swarm_id: Some(swarm_id),
            content_integrity: Some(ContentIntegrity::MerkleTree),
            merkle_hash_function: Some(hash_function::SHA1),
            chunk_addressing: Some(addressing),
            ..HandshakeOptions::default()
        }
    }

    /// Appends the options in ascending code order and the 0xFF end marker.
    /// `config` gives the addressing method in effect (for the live discard window width).
    pub fn encode(&self, config: &CodecConfig, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        let start = out.len();
        let r = self.write(config, out);
        if r.is_err() {
            out.truncate(start);
        }
        r
    }

    fn write(&self, config: &CodecConfig, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        if let Some(v) = self.version {
            out.extend_from_slice(&[code::VERSION, v]);
        }
        if let Some(v) = self.min_version {
            out.extend_from_slice(&[code::MIN_VERSION, v]);
        }
        if let Some(id) = self.swarm_id {
            let len = u16::try_from(id.len()).map_err(|_| EncodeError::ValueTooLong {
                what: "swarm ID",
                len: id.len(),
                max: usize::from(u16::MAX),
            })?;
            out.push(code::SWARM_ID);
            out.extend_from_slice(&len.to_be_bytes());
            out.extend_from_slice(id);
        }
        if let Some(v) = self.content_integrity {
            out.extend_from_slice(&[code::CONTENT_INTEGRITY, v.wire_code()]);
        }
        if let Some(v) = self.merkle_hash_function {
            if merkle_hash_size(v).is_none() {
                return Err(EncodeError::UnknownHashFunction { code: v });
            }
            out.extend_from_slice(&[code::MERKLE_HASH_FUNCTION, v]);
        }
        if let Some(v) = self.live_signature_algorithm {
            out.extend_from_slice(&[code::LIVE_SIGNATURE_ALGORITHM, v]);
        }
        if let Some(v) = self.chunk_addressing {
            out.extend_from_slice(&[code::CHUNK_ADDRESSING, v.wire_code()]);
        }
        if let Some(w) = self.live_discard_window {
            out.push(code::LIVE_DISCARD_WINDOW);
            if self.discard_window_is_32bit(config) {
                let w =
                    u32::try_from(w).map_err(|_| EncodeError::DiscardWindowTooWide { value: w })?;
                out.extend_from_slice(&w.to_be_bytes());
            } else {
                out.extend_from_slice(&w.to_be_bytes());
            }
        }
        if let Some(s) = &self.supported_messages {
            let bitmap = s.bitmap();
            // At most 32 bytes, so the length always fits.
            out.extend_from_slice(&[code::SUPPORTED_MESSAGES, bitmap.len() as u8]);
            out.extend_from_slice(bitmap);
        }
        if let Some(v) = self.chunk_size {
            out.push(code::CHUNK_SIZE);
            out.extend_from_slice(&v.to_be_bytes());
        }
        out.push(code::END);
        Ok(())
    }

    fn discard_window_is_32bit(&self, config: &CodecConfig) -> bool {
        self.chunk_addressing
            .unwrap_or(config.chunk_addressing)
            .is_32bit()
    }

    /// Reads an option list up to and including 0xFF.
    pub(crate) fn read(r: &mut Reader<'a>, config: &CodecConfig) -> Result<Self, DecodeError> {
        let mut opts = HandshakeOptions::default();
        let mut previous: Option<u8> = None;
        loop {
            let offset = r.offset();
            let Ok(c) = r.u8("option code") else {
                return Err(DecodeError::MissingOptionsEnd { offset });
            };
            if c == code::END {
                return Ok(opts);
            }
            if c > code::CHUNK_SIZE {
                return Err(DecodeError::UnknownOption { offset, code: c });
            }
            if let Some(p) = previous
                && c <= p
            {
                return Err(DecodeError::OptionOutOfOrder {
                    offset,
                    code: c,
                    previous: p,
                });
            }
            previous = Some(c);
            let bad = |reason| DecodeError::BadOptionValue {
                offset,
                code: c,
                reason,
            };
            match c {
                code::VERSION => opts.version = Some(r.u8("version option")?),
                code::MIN_VERSION => opts.min_version = Some(r.u8("minimum version option")?),
                code::SWARM_ID => {
                    let len = r.u16("swarm ID length")?;
                    opts.swarm_id = Some(r.take(usize::from(len), "swarm ID")?);
                }
                code::CONTENT_INTEGRITY => {
                    let v = r.u8("content integrity option")?;
                    opts.content_integrity = Some(
                        ContentIntegrity::from_wire_code(v)
                            .ok_or(bad("unknown content integrity protection method"))?,
                    );
                }
                code::MERKLE_HASH_FUNCTION => {
                    let v = r.u8("Merkle hash function option")?;
                    if merkle_hash_size(v).is_none() {
                        return Err(bad("unknown Merkle hash function"));
                    }
                    opts.merkle_hash_function = Some(v);
                }
                code::LIVE_SIGNATURE_ALGORITHM => {
                    opts.live_signature_algorithm = Some(r.u8("live signature algorithm option")?)
                }
                code::CHUNK_ADDRESSING => {
                    let v = r.u8("chunk addressing option")?;
                    opts.chunk_addressing = Some(
                        ChunkAddressing::from_wire_code(v)
                            .ok_or(bad("unknown chunk addressing method"))?,
                    );
                }
                code::LIVE_DISCARD_WINDOW => {
                    opts.live_discard_window = Some(if opts.discard_window_is_32bit(config) {
                        u64::from(r.u32("live discard window")?)
                    } else {
                        r.u64("live discard window")?
                    });
                }
                code::SUPPORTED_MESSAGES => {
                    let len = r.u8("supported messages length")?;
                    let bitmap = r.take(usize::from(len), "supported messages bitmap")?;
                    opts.supported_messages = Some(
                        SupportedMessages::from_bitmap(bitmap)
                            .ok_or(bad("bit set for a message type above 255"))?,
                    );
                }
                _ => opts.chunk_size = Some(r.u32("chunk size option")?),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(o: &HandshakeOptions<'_>, config: &CodecConfig) -> Vec<u8> {
        let mut out = Vec::new();
        o.encode(config, &mut out).unwrap();
        out
    }

    fn dec<'a>(bytes: &'a [u8], config: &CodecConfig) -> Result<HandshakeOptions<'a>, DecodeError> {
        let mut r = Reader::new(bytes, 0);
        let o = HandshakeOptions::read(&mut r, config)?;
        assert!(r.is_empty());
        Ok(o)
    }

    #[test]
    fn supported_messages_rfc_example() {
        let mut s = SupportedMessages::all();
        for t in [
            MessageType::Ack,
            MessageType::PexResV4,
            MessageType::PexReq,
            MessageType::PexResV6,
            MessageType::PexResCert,
        ] {
            s.remove(t);
        }
        assert_eq!(s.bitmap(), [0xD9, 0xF0]);
        let o = HandshakeOptions {
            supported_messages: Some(s),
            ..Default::default()
        };
        let c = CodecConfig::default();
        assert_eq!(enc(&o, &c), [0x08, 0x02, 0xD9, 0xF0, 0xFF]);
        assert_eq!(dec(&[0x08, 0x02, 0xD9, 0xF0, 0xFF], &c), Ok(o));
        // Untrimmed bitmaps are accepted.
        assert_eq!(dec(&[0x08, 0x03, 0xD9, 0xF0, 0x00, 0xFF], &c), Ok(o));
        assert!(s.contains(MessageType::Handshake) && !s.contains(MessageType::Ack));
        assert_eq!(SupportedMessages::all().bitmap(), [0xFF, 0xFC]);
        assert_eq!(SupportedMessages::empty().bitmap(), [] as [u8; 0]);
        let mut big = [0u8; 40];
        big[39] = 1;
        assert_eq!(SupportedMessages::from_bitmap(&big), None);
        let mut x = SupportedMessages::empty();
        x.insert_code(255);
        assert!(x.contains_code(255) && x.bitmap().len() == 32);
    }

    #[test]
    fn digest_option_encodings() {
        let c = CodecConfig::default();
        let o = HandshakeOptions {
            chunk_size: Some(1024),
            ..Default::default()
        };
        assert_eq!(enc(&o, &c), [0x09, 0, 0, 0x04, 0, 0xFF]);
        let o = HandshakeOptions {
            live_discard_window: Some(LIVE_DISCARD_ALL_32),
            ..Default::default()
        };
        assert_eq!(enc(&o, &c), [0x07, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]);
        assert_eq!(dec(&[0x07, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF], &c), Ok(o));
        // With a 64-bit method in the same list the window is 64 bits wide.
        let o = HandshakeOptions {
            chunk_addressing: Some(ChunkAddressing::Chunk64),
            live_discard_window: Some(u64::MAX),
            ..Default::default()
        };
        let bytes = enc(&o, &c);
        assert_eq!(bytes.len(), 2 + 9 + 1);
        assert_eq!(dec(&bytes, &c), Ok(o));
        // Too wide for 32 bits.
        let o = HandshakeOptions {
            live_discard_window: Some(1 << 32),
            ..Default::default()
        };
        let mut out = vec![1];
        assert_eq!(
            o.encode(&c, &mut out),
            Err(EncodeError::DiscardWindowTooWide { value: 1 << 32 })
        );
        assert_eq!(out, [1]);
    }

    #[test]
    fn rejects_bad_lists() {
        let c = CodecConfig::default();
        assert!(matches!(
            dec(&[0x01, 0x01, 0x00, 0x01, 0xFF], &c),
            Err(DecodeError::OptionOutOfOrder {
                offset: 2,
                code: 0,
                previous: 1
            })
        ));
        assert!(matches!(
            dec(&[0x01, 0x01, 0x01, 0x01, 0xFF], &c),
            Err(DecodeError::OptionOutOfOrder { .. })
        ));
        assert_eq!(
            dec(&[0x0A, 0x00, 0xFF], &c),
            Err(DecodeError::UnknownOption {
                offset: 0,
                code: 10
            })
        );
        assert_eq!(
            dec(&[0x00, 0x01], &c),
            Err(DecodeError::MissingOptionsEnd { offset: 2 })
        );
        assert!(matches!(
            dec(&[0x06, 0x05, 0xFF], &c),
            Err(DecodeError::BadOptionValue {
                offset: 0,
                code: 6,
                ..
            })
        ));
        assert!(matches!(
            dec(&[0x03, 0x04, 0xFF], &c),
            Err(DecodeError::BadOptionValue { code: 3, .. })
        ));
        assert!(matches!(
            dec(&[0x04, 0x05, 0xFF], &c),
            Err(DecodeError::BadOptionValue { code: 4, .. })
        ));
        assert!(matches!(
            dec(&[0x02, 0x00, 0x05, 1, 2, 3], &c),
            Err(DecodeError::Truncated {
                needed: 5,
                available: 3,
                ..
            })
        ));
        assert!(matches!(
            dec(&[0x09, 0x00, 0x04], &c),
            Err(DecodeError::Truncated { .. })
        ));
        // 0xFF alone is the empty list.
        assert_eq!(dec(&[0xFF], &c), Ok(HandshakeOptions::default()));
    }

    #[test]
    fn size_tables() {
        assert_eq!(merkle_hash_size(hash_function::SHA1), Some(20));
        assert_eq!(merkle_hash_size(hash_function::SHA256), Some(32));
        assert_eq!(merkle_hash_size(5), None);
        assert_eq!(signature_size(13), Some(64));
        assert_eq!(signature_size(8), None);
        assert_eq!(
            ContentIntegrity::from_wire_code(3),
            Some(ContentIntegrity::UnifiedMerkleTree)
        );
        assert_eq!(ContentIntegrity::from_wire_code(4), None);
    }
}
