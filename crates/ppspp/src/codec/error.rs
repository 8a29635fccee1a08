//! Decoding and encoding errors.
//!
//! Every [`DecodeError`] carries the byte offset (from the start of the datagram, or of the
//! slice handed to [`decode_message`](super::decode_message)) where the problem was found.

use core::fmt;

use super::addressing::ChunkAddressing;
use crate::Bin;

/// Why bytes from the network could not be decoded.
///
/// A peer that sends one of these is broken or hostile: RFC 7574 has no error messages,
/// the datagram is dropped (the messages decoded before the error may still be used).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeError {
    /// Fewer than 4 bytes: not even a channel ID.
    TooShort {
        /// Datagram length in bytes.
        len: usize,
    },
    /// Longer than [`CodecConfig::max_datagram_len`](super::CodecConfig::max_datagram_len).
    Oversized {
        /// Datagram length in bytes.
        len: usize,
        /// The configured limit, in bytes.
        max: usize,
    },
    /// A field runs past the end of the datagram.
    Truncated {
        /// Byte offset of the field.
        offset: usize,
        /// Bytes the field needs.
        needed: usize,
        /// Bytes left in the datagram.
        available: usize,
        /// Name of the field, for the message.
        what: &'static str,
    },
    /// A message type byte that RFC 7574 does not assign (14–255).
    UnknownMessageType {
        /// Byte offset of the type byte.
        offset: usize,
        /// The type byte.
        code: u8,
    },
    /// A handshake option code that RFC 7574 does not assign (10–254).
    UnknownOption {
        /// Byte offset of the option code.
        offset: usize,
        /// The option code.
        code: u8,
    },
    /// A handshake option that is not above the previous one (out of order or repeated).
    OptionOutOfOrder {
        /// Byte offset of the option code.
        offset: usize,
        /// The option code.
        code: u8,
        /// Code of the option before it.
        previous: u8,
    },
    /// A handshake option whose value is not allowed.
    BadOptionValue {
        /// Byte offset of the option code.
        offset: usize,
        /// The option code.
        code: u8,
        /// What is wrong with the value.
        reason: &'static str,
    },
    /// The option list of a HANDSHAKE ended without the 0xFF end marker.
    MissingOptionsEnd {
        /// Byte offset where the marker was expected (the end of the datagram).
        offset: usize,
    },
    /// A chunk or byte range whose start lies after its end.
    InvalidChunkSpec {
        /// Byte offset of the chunk spec.
        offset: usize,
        /// Start of the range (chunk index or byte offset).
        start: u64,
        /// End of the range (inclusive), below `start`.
        end: u64,
    },
}

impl DecodeError {
    /// Byte offset of the problem (0 for whole-datagram errors).
    pub fn offset(&self) -> usize {
        match *self {
            DecodeError::TooShort { .. } | DecodeError::Oversized { .. } => 0,
            DecodeError::Truncated { offset, .. }
            | DecodeError::UnknownMessageType { offset, .. }
            | DecodeError::UnknownOption { offset, .. }
            | DecodeError::OptionOutOfOrder { offset, .. }
            | DecodeError::BadOptionValue { offset, .. }
            | DecodeError::MissingOptionsEnd { offset }
            | DecodeError::InvalidChunkSpec { offset, .. } => offset,
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::TooShort { len } => {
                write!(f, "datagram of {len} bytes is shorter than a channel ID")
            }
            DecodeError::Oversized { len, max } => {
                write!(f, "datagram of {len} bytes exceeds the limit of {max}")
            }
            DecodeError::Truncated {
                offset,
                needed,
                available,
                what,
            } => write!(
                f,
                "truncated {what} at byte {offset}: needs {needed} bytes, {available} left"
            ),
            DecodeError::UnknownMessageType { offset, code } => {
                write!(f, "unknown message type {code} at byte {offset}")
            }
            DecodeError::UnknownOption { offset, code } => {
                write!(f, "unknown handshake option {code} at byte {offset}")
            }
            DecodeError::OptionOutOfOrder {
                offset,
                code,
                previous,
            } => write!(
                f,
                "handshake option {code} at byte {offset} follows option {previous}"
            ),
            DecodeError::BadOptionValue {
                offset,
                code,
                reason,
            } => write!(f, "handshake option {code} at byte {offset}: {reason}"),
            DecodeError::MissingOptionsEnd { offset } => {
                write!(f, "handshake options end at byte {offset} without 0xFF")
            }
            DecodeError::InvalidChunkSpec { offset, start, end } => {
                write!(
                    f,
                    "chunk spec at byte {offset} starts at {start} after its end {end}"
                )
            }
        }
    }
}

impl core::error::Error for DecodeError {}

/// Why a message could not be encoded. The output buffer is left as it was.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EncodeError {
    /// The chunk spec uses another addressing method than the one in effect.
    AddressingMismatch {
        /// The method in effect.
        expected: ChunkAddressing,
        /// The method the spec is written in.
        found: ChunkAddressing,
    },
    /// The bin does not fit the 32-bit bin encoding.
    BinNotRepresentable {
        /// The bin.
        bin: Bin,
    },
    /// A range (chunk or byte) that cannot be expressed: start after end, the empty bin,
    /// a range beyond the 32- or 64-bit space, or a zero chunk size.
    InvalidChunkSpec {
        /// Which of these it is.
        reason: &'static str,
    },
    /// An INTEGRITY hash whose length differs from the negotiated hash size.
    HashLength {
        /// Negotiated hash size in bytes.
        expected: usize,
        /// Length of the given hash in bytes.
        found: usize,
    },
    /// A SIGNED_INTEGRITY signature whose length differs from the configured size.
    SignatureLength {
        /// Configured signature size in bytes.
        expected: usize,
        /// Length of the given signature in bytes.
        found: usize,
    },
    /// A length-prefixed field (swarm ID, certificate) longer than its prefix allows.
    ValueTooLong {
        /// Name of the field, for the message.
        what: &'static str,
        /// Its length in bytes.
        len: usize,
        /// The most its length prefix can express, in bytes.
        max: usize,
    },
    /// A live discard window above `u32::MAX` with 32-bit chunk addressing.
    DiscardWindowTooWide {
        /// The window, in chunks.
        value: u64,
    },
    /// A Merkle hash function code without a known hash size (only 0–4 exist).
    UnknownHashFunction {
        /// The hash function code.
        code: u8,
    },
    /// A message after a DATA that must end its datagram (its last chunk is short), or
    /// anything but DATA and its hashes after a DATA.
    DataNotLast,
    /// The datagram would exceed [`CodecConfig::max_datagram_len`](super::CodecConfig::max_datagram_len).
    Oversized {
        /// Length the datagram would reach, in bytes.
        len: usize,
        /// The configured limit, in bytes.
        max: usize,
    },
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EncodeError::AddressingMismatch { expected, found } => write!(
                f,
                "chunk spec uses {found:?} addressing but {expected:?} is in effect"
            ),
            EncodeError::BinNotRepresentable { bin } => {
                write!(f, "{bin:?} does not fit a 32-bit bin")
            }
            EncodeError::InvalidChunkSpec { reason } => write!(f, "invalid chunk spec: {reason}"),
            EncodeError::HashLength { expected, found } => {
                write!(f, "hash of {found} bytes, expected {expected}")
            }
            EncodeError::SignatureLength { expected, found } => {
                write!(f, "signature of {found} bytes, expected {expected}")
            }
            EncodeError::ValueTooLong { what, len, max } => {
                write!(f, "{what} of {len} bytes exceeds {max}")
            }
            EncodeError::DiscardWindowTooWide { value } => {
                write!(f, "live discard window {value} does not fit 32 bits")
            }
            EncodeError::UnknownHashFunction { code } => {
                write!(f, "unknown Merkle hash function {code}")
            }
            EncodeError::DataNotLast => f.write_str(
                "only full-length DATA and their hashes may follow a DATA in a datagram",
            ),
            EncodeError::Oversized { len, max } => {
                write!(f, "datagram of {len} bytes exceeds the limit of {max}")
            }
        }
    }
}

impl core::error::Error for EncodeError {}
