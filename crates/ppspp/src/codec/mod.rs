//! The PPSPP wire format (RFC 7574 §8, digest §1): datagrams, messages, chunk specs and
//! handshake options. Sans-IO: bytes in, values out, and back.
//!
//! A datagram is a 4-byte destination channel ID followed by zero or more messages
//! packed back to back (none at all is a keep-alive). A message's length is implied by
//! its type and by the codec state, which is why decoding and encoding take a
//! [`CodecConfig`]: the chunk addressing method, the hash size and the signature size.
//!
//! # Handshakes change the state mid-datagram
//!
//! A HANDSHAKE that carries a chunk addressing method (option 6), a Merkle hash function
//! (option 4, which fixes the INTEGRITY hash size), a live signature algorithm with a
//! fixed signature size (option 5) or a chunk size (option 9) changes how the **later
//! messages of the same datagram** are decoded: libswift answers a handshake with
//! `HANDSHAKE + HAVE…` in one datagram, and those HAVEs use the addressing method the
//! handshake just announced. [`MessageIter`] and [`DatagramBuilder`] both apply
//! [`CodecConfig::apply_handshake`] after each HANDSHAKE; the state does not carry over
//! to the next datagram, so a connection should keep its own [`CodecConfig`] and apply
//! the peer's handshake to it (see [`MessageIter::config`]).
//!
//! # Limits
//!
//! * DATA runs to the end of its datagram (no length field), so it is always the last
//!   message; several fixed-size DATA messages in one datagram are not supported.
//! * DATA always carries the 64-bit timestamp of protocol version 1 (libswift's legacy
//!   pre-RFC mode without it is not supported).
//! * Decoding never panics and never allocates; byte fields borrow from the input.
//!
//! ```
//! use ppspp::codec::{decode_datagram, CodecConfig, Message, ChunkSpec};
//! let bytes = [0, 0, 0, 8, 8, 0, 0, 0, 0, 0, 0, 0, 0, 6];
//! let dgram = decode_datagram(&bytes, &CodecConfig::default()).unwrap();
//! assert_eq!(dgram.channel, 8);
//! let msgs = dgram.collect_messages().unwrap();
//! assert_eq!(msgs, [Message::Request(ChunkSpec::Chunk32 { start: 0, end: 0 }), Message::PexReq]);
//! ```

mod addressing;
mod chunk_spec;
mod error;
mod message;
mod message_type;
mod options;
mod reader;

pub use addressing::ChunkAddressing;
pub use chunk_spec::{ChunkSpec, ChunkSpecBins};
pub use error::{DecodeError, EncodeError};
pub use message::{Handshake, Message};
pub use message_type::MessageType;
pub use options::{
    ContentIntegrity, HandshakeOptions, LIVE_DISCARD_ALL_32, SupportedMessages,
    code as option_code, hash_function, merkle_hash_size, signature_size,
};

use reader::Reader;

/// Length of the destination channel ID that starts every datagram.
pub const CHANNEL_ID_LEN: usize = 4;

/// The state that fixes message layouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CodecConfig {
    /// How chunk specs are written (default chunk32).
    pub chunk_addressing: ChunkAddressing,
    /// INTEGRITY hash length (default 20, SHA-1).
    pub hash_size: usize,
    /// SIGNED_INTEGRITY signature length, fixed by the algorithm and key (default 64,
    /// ECDSAP256SHA256).
    pub signature_size: usize,
    /// Bytes per chunk (default 1024); only used to convert byte64 ranges.
    pub chunk_size: u32,
    /// Longest datagram accepted or produced (default 65 536).
    pub max_datagram_len: usize,
}

impl Default for CodecConfig {
    fn default() -> Self {
        CodecConfig {
            chunk_addressing: ChunkAddressing::Chunk32,
            hash_size: 20,
            signature_size: 64,
            chunk_size: 1024,
            max_datagram_len: 65_536,
        }
    }
}

impl CodecConfig {
    /// The default configuration with another addressing method.
    pub fn with_addressing(addressing: ChunkAddressing) -> Self {
        CodecConfig {
            chunk_addressing: addressing,
            ..CodecConfig::default()
        }
    }

    /// Adopts what a handshake announces: addressing method, hash size (from the Merkle
    /// hash function), signature size (for algorithms with fixed-size signatures, see
    /// [`signature_size`]) and chunk size. Options not present change nothing.
    pub fn apply_handshake(&mut self, options: &HandshakeOptions<'_>) {
        if let Some(addressing) = options.chunk_addressing {
            self.chunk_addressing = addressing;
        }
        if let Some(size) = options.merkle_hash_function.and_then(merkle_hash_size) {
            self.hash_size = size;
        }
        if let Some(size) = options.live_signature_algorithm.and_then(signature_size) {
            self.signature_size = size;
        }
        if let Some(cs) = options.chunk_size {
            self.chunk_size = cs;
        }
    }
}

/// A datagram whose channel ID has been read; its messages are decoded lazily by
/// [`messages`](Self::messages), so a datagram can decode `Ok` and still hold a bad
/// message.
#[derive(Debug, Clone)]
pub struct Datagram<'a> {
    /// The destination channel ID (0 only on an initiator's first handshake).
    pub channel: u32,
    body: &'a [u8],
    config: CodecConfig,
}

impl<'a> Datagram<'a> {
    /// True when the datagram holds no message (a keep-alive).
    pub fn is_keep_alive(&self) -> bool {
        self.body.is_empty()
    }

    /// The bytes after the channel ID.
    pub fn body(&self) -> &'a [u8] {
        self.body
    }

    /// The messages in order; iteration stops after the first error.
    pub fn messages(&self) -> MessageIter<'a> {
        MessageIter {
            reader: Reader::new(self.body, CHANNEL_ID_LEN),
            config: self.config,
            failed: false,
        }
    }

    /// All messages, or the first error.
    pub fn collect_messages(&self) -> Result<Vec<Message<'a>>, DecodeError> {
        self.messages().collect()
    }
}

impl<'a> IntoIterator for &Datagram<'a> {
    type Item = Result<Message<'a>, DecodeError>;
    type IntoIter = MessageIter<'a>;

    fn into_iter(self) -> MessageIter<'a> {
        self.messages()
    }
}

impl<'a> IntoIterator for Datagram<'a> {
    type Item = Result<Message<'a>, DecodeError>;
    type IntoIter = MessageIter<'a>;

    fn into_iter(self) -> MessageIter<'a> {
        self.messages()
    }
}

/// Decodes the messages of a datagram one at a time, applying each HANDSHAKE to the
/// codec state for the messages after it.
#[derive(Debug, Clone)]
pub struct MessageIter<'a> {
    reader: Reader<'a>,
    config: CodecConfig,
    failed: bool,
}

impl MessageIter<'_> {
    /// The codec state for the next message (after the handshakes seen so far).
    pub fn config(&self) -> &CodecConfig {
        &self.config
    }

    /// Offset within the datagram of the next message.
    pub fn offset(&self) -> usize {
        self.reader.offset()
    }
}

impl<'a> Iterator for MessageIter<'a> {
    type Item = Result<Message<'a>, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.reader.is_empty() {
            return None;
        }
        let msg = Message::read(&mut self.reader, &self.config);
        match &msg {
            Ok(Message::Handshake(h)) => self.config.apply_handshake(&h.options),
            Ok(_) => {}
            Err(_) => self.failed = true,
        }
        Some(msg)
    }
}

impl core::iter::FusedIterator for MessageIter<'_> {}

/// Reads the channel ID of a datagram and checks its size; iterate the result for the
/// messages. Errors: [`DecodeError::Oversized`] above `config.max_datagram_len`,
/// [`DecodeError::TooShort`] below 4 bytes.
pub fn decode_datagram<'a>(
    bytes: &'a [u8],
    config: &CodecConfig,
) -> Result<Datagram<'a>, DecodeError> {
    if bytes.len() > config.max_datagram_len {
        return Err(DecodeError::Oversized {
            len: bytes.len(),
            max: config.max_datagram_len,
        });
    }
    let mut r = Reader::new(bytes, 0);
    let channel = r
        .u32("channel ID")
        .map_err(|_| DecodeError::TooShort { len: bytes.len() })?;
    Ok(Datagram {
        channel,
        body: r.rest(),
        config: *config,
    })
}

/// Decodes one message from the front of `bytes` (error offsets relative to `bytes`),
/// returning it and the number of bytes it took. DATA takes its chunks' full length, or
/// the rest when that is less.
pub fn decode_message<'a>(
    bytes: &'a [u8],
    config: &CodecConfig,
) -> Result<(Message<'a>, usize), DecodeError> {
    let mut r = Reader::new(bytes, 0);
    let msg = Message::read(&mut r, config)?;
    Ok((msg, r.position()))
}

/// Appends one message. Errors when a chunk spec does not use `config.chunk_addressing`
/// or cannot be written in it, a hash or signature has the wrong length, or an option
/// value does not fit; `out` is then left unchanged.
pub fn encode_message(
    msg: &Message<'_>,
    config: &CodecConfig,
    out: &mut Vec<u8>,
) -> Result<(), EncodeError> {
    msg.write(config, out)
}

/// Appends a whole datagram: channel ID, then the messages, applying each HANDSHAKE to
/// the state for the messages after it (as [`MessageIter`] does). Rejects a message after
/// DATA and a datagram longer than `config.max_datagram_len`; on error `out` is left
/// unchanged.
pub fn encode_datagram(
    channel: u32,
    messages: &[Message<'_>],
    config: &CodecConfig,
    out: &mut Vec<u8>,
) -> Result<(), EncodeError> {
    let start = out.len();
    let mut b = DatagramBuilder::appending(core::mem::take(out), channel, config);
    let mut result = Ok(());
    for m in messages {
        result = b.push(m);
        if result.is_err() {
            break;
        }
    }
    *out = b.buf;
    if result.is_err() {
        out.truncate(start);
    }
    result
}

/// Builds a datagram message by message (e.g. to fill up to an MTU).
#[derive(Debug, Clone)]
pub struct DatagramBuilder {
    buf: Vec<u8>,
    start: usize,
    config: CodecConfig,
    /// Where the first DATA starts (datagram length before it), if one was pushed: after it
    /// only DATA and their hashes may follow.
    first_data: Option<usize>,
    /// The last DATA's last chunk is short: nothing may follow it.
    sealed: bool,
}

impl DatagramBuilder {
    /// Starts a datagram to `channel` (the receiver's channel ID) in a new buffer.
    pub fn new(channel: u32, config: &CodecConfig) -> Self {
        Self::with_buffer(Vec::with_capacity(1500), channel, config)
    }

    /// Reuses `buf` (cleared) for the datagram.
    pub fn with_buffer(mut buf: Vec<u8>, channel: u32, config: &CodecConfig) -> Self {
        buf.clear();
        Self::appending(buf, channel, config)
    }

    /// Builds the datagram after what `buf` already holds.
    fn appending(mut buf: Vec<u8>, channel: u32, config: &CodecConfig) -> Self {
        let start = buf.len();
        buf.extend_from_slice(&channel.to_be_bytes());
        DatagramBuilder {
            buf,
            start,
            config: *config,
            first_data: None,
            sealed: false,
        }
    }

    /// Appends a message; on error the datagram is unchanged.
    pub fn push(&mut self, msg: &Message<'_>) -> Result<(), EncodeError> {
        let follows_data = matches!(
            msg,
            Message::Data { .. } | Message::Integrity { .. } | Message::SignedIntegrity { .. }
        );
        if self.sealed || (self.first_data.is_some() && !follows_data) {
            return Err(EncodeError::DataNotLast);
        }
        let before = self.buf.len();
        msg.write(&self.config, &mut self.buf)?;
        let len = self.len();
        if len > self.config.max_datagram_len {
            self.buf.truncate(before);
            return Err(EncodeError::Oversized {
                len,
                max: self.config.max_datagram_len,
            });
        }
        match msg {
            Message::Handshake(h) => self.config.apply_handshake(&h.options),
            Message::Data {
                chunks, payload, ..
            } => {
                self.first_data.get_or_insert(before - self.start);
                // A reader takes a DATA's full length when more follows, so anything after
                // a short one would be read as its payload.
                self.sealed =
                    chunks.full_data_len(self.config.chunk_size) != Some(payload.len() as u64);
            }
            _ => {}
        }
        Ok(())
    }

    /// Whether another DATA may follow: no DATA yet, or only full-length ones.
    pub fn takes_data(&self) -> bool {
        !self.sealed
    }

    /// Datagram length so far, channel ID included.
    pub fn len(&self) -> usize {
        self.buf.len().saturating_sub(self.start)
    }

    /// True when no message has been pushed (the datagram would be a keep-alive).
    pub fn is_empty(&self) -> bool {
        self.len() == CHANNEL_ID_LEN
    }

    /// Drops the messages pushed after the datagram was `len` bytes long (a sender that
    /// finds a group of messages does not fit, such as hashes and their DATA).
    pub fn truncate(&mut self, len: usize) {
        if len >= CHANNEL_ID_LEN && len < self.len() {
            self.buf.truncate(self.start + len);
            // What stays after the first DATA is full-length DATA and hashes.
            self.sealed = false;
            if self.first_data.is_some_and(|at| len <= at) {
                self.first_data = None;
            }
        }
    }

    /// Changes the length limit for the messages pushed from now on (a sender may keep
    /// control messages within an MTU and still append a larger DATA).
    pub fn set_max_len(&mut self, max: usize) {
        self.config.max_datagram_len = max;
    }

    /// The codec state for the next message.
    pub fn config(&self) -> &CodecConfig {
        &self.config
    }

    /// The datagram bytes.
    pub fn finish(self) -> Vec<u8> {
        self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Bin;

    #[test]
    fn keep_alive_and_size_limits() {
        let c = CodecConfig::default();
        let d = decode_datagram(&[0, 0, 0, 7], &c).unwrap();
        assert_eq!(d.channel, 7);
        assert!(d.is_keep_alive());
        assert_eq!(d.messages().count(), 0);
        assert_eq!(
            decode_datagram(&[0, 0, 7], &c).unwrap_err(),
            DecodeError::TooShort { len: 3 }
        );
        let small = CodecConfig {
            max_datagram_len: 5,
            ..c
        };
        assert_eq!(
            decode_datagram(&[0; 6], &small).unwrap_err(),
            DecodeError::Oversized { len: 6, max: 5 }
        );
        let mut out = Vec::new();
        assert_eq!(
            encode_datagram(1, &[Message::Choke, Message::Unchoke], &small, &mut out),
            Err(EncodeError::Oversized { len: 6, max: 5 })
        );
        assert!(out.is_empty());
        encode_datagram(1, &[], &c, &mut out).unwrap();
        assert_eq!(out, [0, 0, 0, 1]);
    }

    #[test]
    fn handshake_switches_addressing_for_later_messages() {
        // HANDSHAKE announcing bin32, then a HAVE of bin 1 in 4 bytes.
        let bytes = [0, 0, 0, 1, 0, 0, 0, 0, 8, 6, 0, 0xFF, 3, 0, 0, 0, 1, 0x0A];
        let c = CodecConfig::default();
        let d = decode_datagram(&bytes, &c).unwrap();
        let mut it = d.messages();
        assert!(matches!(it.next(), Some(Ok(Message::Handshake(_)))));
        assert_eq!(it.config().chunk_addressing, ChunkAddressing::Bin32);
        assert_eq!(
            it.next(),
            Some(Ok(Message::Have(ChunkSpec::Bin32(Bin::from_raw(1)))))
        );
        assert_eq!(it.next(), Some(Ok(Message::Choke)));
        assert_eq!(it.next(), None);
        let msgs = d.collect_messages().unwrap();
        let mut out = Vec::new();
        encode_datagram(1, &msgs, &c, &mut out).unwrap();
        assert_eq!(out, bytes);
        // The same HAVE without the handshake is read as chunk32 and runs short.
        let e = decode_datagram(
            &bytes[..4]
                .iter()
                .chain(&bytes[12..])
                .copied()
                .collect::<Vec<_>>(),
            &c,
        )
        .unwrap()
        .collect_messages()
        .unwrap_err();
        assert!(matches!(
            e,
            DecodeError::Truncated {
                offset: 5,
                needed: 8,
                available: 5,
                ..
            }
        ));
    }

    #[test]
    fn hash_function_sets_integrity_length() {
        let hash = [0xAB; 32];
        let msgs = [
            Message::Handshake(Handshake {
                source_channel: 5,
                options: HandshakeOptions {
                    merkle_hash_function: Some(hash_function::SHA256),
                    ..Default::default()
                },
            }),
            Message::Integrity {
                chunks: ChunkSpec::Chunk32 { start: 0, end: 3 },
                hash: &hash,
            },
        ];
        let c = CodecConfig::default();
        let mut out = Vec::new();
        encode_datagram(9, &msgs, &c, &mut out).unwrap();
        let d = decode_datagram(&out, &c).unwrap();
        assert_eq!(d.collect_messages().unwrap(), msgs);
        // Without the handshake the 32-byte hash is rejected.
        let mut out2 = Vec::new();
        assert!(matches!(
            encode_datagram(9, &msgs[1..], &c, &mut out2),
            Err(EncodeError::HashLength {
                expected: 20,
                found: 32
            })
        ));
    }

    #[test]
    fn builder_rejects_messages_after_data() {
        let c = CodecConfig::default();
        let mut b = DatagramBuilder::new(3, &c);
        assert!(b.is_empty());
        b.push(&Message::Data {
            chunks: ChunkSpec::Chunk32 { start: 0, end: 0 },
            timestamp: 1,
            payload: b"x",
        })
        .unwrap();
        assert_eq!(b.push(&Message::Choke), Err(EncodeError::DataNotLast));
        assert_eq!(b.len(), 4 + 1 + 8 + 8 + 1);
        let mut out = vec![0xEE];
        let data = Message::Data {
            chunks: ChunkSpec::Chunk32 { start: 0, end: 0 },
            timestamp: 1,
            payload: b"x",
        };
        assert_eq!(
            encode_datagram(3, &[data, Message::Choke], &c, &mut out),
            Err(EncodeError::DataNotLast)
        );
        assert_eq!(out, [0xEE]);
    }

    #[test]
    fn builder_lets_full_length_data_share_a_datagram() {
        let c = CodecConfig {
            chunk_size: 4,
            ..CodecConfig::default()
        };
        let data = |chunk: u32, payload: &'static [u8]| Message::Data {
            chunks: ChunkSpec::Chunk32 {
                start: chunk,
                end: chunk,
            },
            timestamp: 1,
            payload,
        };
        let hash = [7u8; 20];
        let integrity = Message::Integrity {
            chunks: ChunkSpec::Chunk32 { start: 3, end: 3 },
            hash: &hash,
        };
        let mut b = DatagramBuilder::new(3, &c);
        b.push(&data(0, b"abcd")).unwrap();
        // After a full DATA: its neighbours' hashes and DATA, nothing else.
        assert_eq!(b.push(&Message::Choke), Err(EncodeError::DataNotLast));
        b.push(&integrity).unwrap();
        b.push(&data(2, b"efgh")).unwrap();
        let two = b.len();
        // A short DATA ends the datagram.
        assert!(b.takes_data());
        b.push(&data(4, b"ij")).unwrap();
        assert!(!b.takes_data());
        assert_eq!(b.push(&data(5, b"klmn")), Err(EncodeError::DataNotLast));
        // Taking the short one back opens the datagram to DATA again, not to the rest.
        b.truncate(two);
        b.push(&data(4, b"klmn")).unwrap();
        assert_eq!(b.push(&Message::Choke), Err(EncodeError::DataNotLast));
        let bytes = b.finish();
        let d = decode_datagram(&bytes, &c).unwrap();
        let msgs = d.collect_messages().unwrap();
        assert_eq!(
            msgs,
            [
                data(0, b"abcd"),
                integrity,
                data(2, b"efgh"),
                data(4, b"klmn")
            ]
        );
        // Without any DATA left, the datagram takes control messages again.
        let mut b = DatagramBuilder::new(3, &c);
        b.push(&data(0, b"abcd")).unwrap();
        b.truncate(CHANNEL_ID_LEN);
        b.push(&Message::Choke).unwrap();
    }

    #[test]
    fn builder_reuses_buffers_and_tracks_handshakes() {
        let c = CodecConfig::default();
        let mut b = DatagramBuilder::with_buffer(vec![1, 2, 3], 0x0A0B_0C0D, &c);
        assert_eq!(b.len(), 4);
        let hs = Message::Handshake(Handshake {
            source_channel: 2,
            options: HandshakeOptions {
                chunk_addressing: Some(ChunkAddressing::Bin64),
                ..Default::default()
            },
        });
        b.push(&hs).unwrap();
        assert_eq!(b.config().chunk_addressing, ChunkAddressing::Bin64);
        assert!(matches!(
            b.push(&Message::Have(ChunkSpec::Chunk32 { start: 0, end: 0 })),
            Err(EncodeError::AddressingMismatch { .. })
        ));
        b.push(&Message::Have(ChunkSpec::Bin64(Bin::ALL))).unwrap();
        let bytes = b.finish();
        assert_eq!(&bytes[..4], &[0x0A, 0x0B, 0x0C, 0x0D]);
        let msgs = decode_datagram(&bytes, &c)
            .unwrap()
            .collect_messages()
            .unwrap();
        assert_eq!(msgs, [hs, Message::Have(ChunkSpec::Bin64(Bin::ALL))]);
    }

    #[test]
    fn iteration_stops_after_an_error() {
        let c = CodecConfig::default();
        let d = decode_datagram(&[0, 0, 0, 0, 0x0A, 0x42, 0x0B], &c).unwrap();
        let v: Vec<_> = d.messages().collect();
        assert_eq!(
            v,
            [
                Ok(Message::Choke),
                Err(DecodeError::UnknownMessageType {
                    offset: 5,
                    code: 0x42
                })
            ]
        );
    }
}
