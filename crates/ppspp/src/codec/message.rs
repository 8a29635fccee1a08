//! Messages (RFC 7574 §8, digest §1.2): one type byte, then a layout fixed by the type,
//! the chunk addressing method and the hash and signature sizes in effect.

use core::net::{Ipv4Addr, Ipv6Addr, SocketAddrV4, SocketAddrV6};

use super::CodecConfig;
use super::chunk_spec::ChunkSpec;
use super::error::{DecodeError, EncodeError};
use super::message_type::MessageType;
use super::options::HandshakeOptions;
use super::reader::Reader;

/// A HANDSHAKE: the sender's own channel ID and its protocol options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Handshake<'a> {
    /// The channel ID the sender wants to be addressed by; 0 closes the channel.
    pub source_channel: u32,
    /// The protocol options (version, swarm ID, integrity and addressing methods, …).
    pub options: HandshakeOptions<'a>,
}

impl Handshake<'_> {
    /// An explicit close: source channel 0 (libswift sends `00 00000000 FF`).
    pub const fn is_close(&self) -> bool {
        self.source_channel == 0
    }

    /// The close message libswift sends: source channel 0, no options.
    pub fn close() -> Handshake<'static> {
        Handshake {
            source_channel: 0,
            options: HandshakeOptions::default(),
        }
    }
}

/// One decoded message. Byte fields borrow from the datagram.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message<'a> {
    /// Opens a channel (or closes it, with source channel 0).
    Handshake(Handshake<'a>),
    /// `timestamp` is the sender's clock in µs (libswift: since the Unix epoch). The
    /// payload is as long as its chunks (RFC 7574 §8.6): a DATA of full-size chunks may be
    /// followed by more DATA (each with its INTEGRITY first), and a DATA at the end of its
    /// datagram takes what is left, so a short last chunk goes last.
    Data {
        /// The chunks carried.
        chunks: ChunkSpec,
        /// Sender's clock at sending, in microseconds.
        timestamp: u64,
        /// The chunk bytes.
        payload: &'a [u8],
    },
    /// `delay_us` is the one-way-delay sample (receiver clock − DATA timestamp), signed:
    /// it is negative when the receiver's clock is behind.
    Ack {
        /// The chunks acknowledged.
        chunks: ChunkSpec,
        /// One-way-delay sample, in microseconds.
        delay_us: i64,
    },
    /// The sender has these chunks, verified.
    Have(ChunkSpec),
    /// `hash` is [`CodecConfig::hash_size`] bytes.
    Integrity {
        /// The Merkle tree node the hash belongs to.
        chunks: ChunkSpec,
        /// The node's hash.
        hash: &'a [u8],
    },
    /// A peer's IPv4 address, in answer to PEX_REQ.
    PexResV4(SocketAddrV4),
    /// Asks for the addresses of other peers in the swarm.
    PexReq,
    /// `timestamp` is 64-bit NTP; `signature` is [`CodecConfig::signature_size`] bytes.
    SignedIntegrity {
        /// The chunks the signature covers.
        chunks: ChunkSpec,
        /// Signing time, as a 64-bit NTP timestamp.
        timestamp: u64,
        /// The signature.
        signature: &'a [u8],
    },
    /// Asks for these chunks.
    Request(ChunkSpec),
    /// Withdraws earlier requests for these chunks.
    Cancel(ChunkSpec),
    /// The sender stops answering requests; outstanding ones are dropped.
    Choke,
    /// The sender answers requests again.
    Unchoke,
    /// Flow info and scope ID are not on the wire and decode as 0.
    PexResV6(SocketAddrV6),
    /// A DER X.509v3 membership certificate (u16 length on the wire).
    PexResCert(&'a [u8]),
}

impl<'a> Message<'a> {
    /// The type of this message.
    pub const fn message_type(&self) -> MessageType {
        match self {
            Message::Handshake(_) => MessageType::Handshake,
            Message::Data { .. } => MessageType::Data,
            Message::Ack { .. } => MessageType::Ack,
            Message::Have(_) => MessageType::Have,
            Message::Integrity { .. } => MessageType::Integrity,
            Message::PexResV4(_) => MessageType::PexResV4,
            Message::PexReq => MessageType::PexReq,
            Message::SignedIntegrity { .. } => MessageType::SignedIntegrity,
            Message::Request(_) => MessageType::Request,
            Message::Cancel(_) => MessageType::Cancel,
            Message::Choke => MessageType::Choke,
            Message::Unchoke => MessageType::Unchoke,
            Message::PexResV6(_) => MessageType::PexResV6,
            Message::PexResCert(_) => MessageType::PexResCert,
        }
    }

    /// The chunk spec, for the message types that carry one.
    pub const fn chunk_spec(&self) -> Option<&ChunkSpec> {
        match self {
            Message::Data { chunks, .. }
            | Message::Ack { chunks, .. }
            | Message::Integrity { chunks, .. }
            | Message::SignedIntegrity { chunks, .. }
            | Message::Have(chunks)
            | Message::Request(chunks)
            | Message::Cancel(chunks) => Some(chunks),
            _ => None,
        }
    }

    /// Reads one message. DATA takes its chunks' full length, or everything left when
    /// that is less (libswift reads DATA the same way).
    pub(crate) fn read(
        r: &mut Reader<'a>,
        config: &CodecConfig,
    ) -> Result<Message<'a>, DecodeError> {
        let offset = r.offset();
        let code = r.u8("message type")?;
        let Some(t) = MessageType::from_code(code) else {
            return Err(DecodeError::UnknownMessageType { offset, code });
        };
        let addressing = config.chunk_addressing;
        Ok(match t {
            MessageType::Handshake => Message::Handshake(Handshake {
                source_channel: r.u32("handshake source channel")?,
                options: HandshakeOptions::read(r, config)?,
            }),
            MessageType::Data => {
                let chunks = ChunkSpec::read(r, addressing)?;
                let timestamp = r.u64("DATA timestamp")?;
                let payload = match chunks.full_data_len(config.chunk_size) {
                    Some(full) if full < r.remaining() as u64 => r.take(full as usize, "DATA")?,
                    _ => r.rest(),
                };
                Message::Data {
                    chunks,
                    timestamp,
                    payload,
                }
            }
            MessageType::Ack => Message::Ack {
                chunks: ChunkSpec::read(r, addressing)?,
                delay_us: r.u64("ACK delay sample")? as i64,
            },
            MessageType::Have => Message::Have(ChunkSpec::read(r, addressing)?),
            MessageType::Integrity => Message::Integrity {
                chunks: ChunkSpec::read(r, addressing)?,
                hash: r.take(config.hash_size, "INTEGRITY hash")?,
            },
            MessageType::PexResV4 => {
                let ip = Ipv4Addr::from(r.u32("PEX_RESv4 address")?);
                Message::PexResV4(SocketAddrV4::new(ip, r.u16("PEX_RESv4 port")?))
            }
            MessageType::PexReq => Message::PexReq,
            MessageType::SignedIntegrity => Message::SignedIntegrity {
                chunks: ChunkSpec::read(r, addressing)?,
                timestamp: r.u64("SIGNED_INTEGRITY timestamp")?,
                signature: r.take(config.signature_size, "SIGNED_INTEGRITY signature")?,
            },
            MessageType::Request => Message::Request(ChunkSpec::read(r, addressing)?),
            MessageType::Cancel => Message::Cancel(ChunkSpec::read(r, addressing)?),
            MessageType::Choke => Message::Choke,
            MessageType::Unchoke => Message::Unchoke,
            MessageType::PexResV6 => {
                let hi = u128::from(r.u64("PEX_RESv6 address")?);
                let lo = u128::from(r.u64("PEX_RESv6 address")?);
                let ip = Ipv6Addr::from((hi << 64) | lo);
                Message::PexResV6(SocketAddrV6::new(ip, r.u16("PEX_RESv6 port")?, 0, 0))
            }
            MessageType::PexResCert => {
                let len = r.u16("PEX_REScert length")?;
                Message::PexResCert(r.take(usize::from(len), "PEX_REScert certificate")?)
            }
        })
    }

    /// Appends the wire form; on error `out` is unchanged.
    pub(crate) fn write(&self, config: &CodecConfig, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        if let Some(spec) = self.chunk_spec() {
            spec.check(config.chunk_addressing)?;
        }
        match self {
            Message::Integrity { hash, .. } if hash.len() != config.hash_size => {
                return Err(EncodeError::HashLength {
                    expected: config.hash_size,
                    found: hash.len(),
                });
            }
            Message::SignedIntegrity { signature, .. }
                if signature.len() != config.signature_size =>
            {
                return Err(EncodeError::SignatureLength {
                    expected: config.signature_size,
                    found: signature.len(),
                });
            }
            Message::PexResCert(cert) if u16::try_from(cert.len()).is_err() => {
                return Err(EncodeError::ValueTooLong {
                    what: "PEX_REScert certificate",
                    len: cert.len(),
                    max: usize::from(u16::MAX),
                });
            }
            _ => {}
        }
        let start = out.len();
        out.push(self.message_type().code());
        match self {
            Message::Handshake(h) => {
                out.extend_from_slice(&h.source_channel.to_be_bytes());
                if let Err(e) = h.options.encode(config, out) {
                    out.truncate(start);
                    return Err(e);
                }
            }
            Message::Data {
                chunks,
                timestamp,
                payload,
            } => {
                chunks.write(out);
                out.extend_from_slice(&timestamp.to_be_bytes());
                out.extend_from_slice(payload);
            }
            Message::Ack { chunks, delay_us } => {
                chunks.write(out);
                out.extend_from_slice(&delay_us.to_be_bytes());
            }
            Message::Have(c) | Message::Request(c) | Message::Cancel(c) => c.write(out),
            Message::Integrity { chunks, hash } => {
                chunks.write(out);
                out.extend_from_slice(hash);
            }
            Message::PexResV4(a) => {
                out.extend_from_slice(&a.ip().octets());
                out.extend_from_slice(&a.port().to_be_bytes());
            }
            Message::SignedIntegrity {
                chunks,
                timestamp,
                signature,
            } => {
                chunks.write(out);
                out.extend_from_slice(&timestamp.to_be_bytes());
                out.extend_from_slice(signature);
            }
            Message::PexResV6(a) => {
                out.extend_from_slice(&a.ip().octets());
                out.extend_from_slice(&a.port().to_be_bytes());
            }
            Message::PexResCert(cert) => {
                // Length checked above.
                out.extend_from_slice(&(cert.len() as u16).to_be_bytes());
                out.extend_from_slice(cert);
            }
            Message::PexReq | Message::Choke | Message::Unchoke => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_codes() {
        for (i, t) in MessageType::ALL.iter().enumerate() {
            assert_eq!(t.code() as usize, i);
            assert_eq!(MessageType::from_code(i as u8), Some(*t));
        }
        assert_eq!(MessageType::from_code(14), None);
        assert_eq!(MessageType::from_code(255), None);
    }

    #[test]
    fn ack_delay_is_signed() {
        let c = CodecConfig::default();
        let mut bytes = vec![2, 0, 0, 0, 1, 0, 0, 0, 1];
        bytes.extend_from_slice(&(-1500i64).to_be_bytes());
        let mut r = Reader::new(&bytes, 0);
        assert_eq!(
            Message::read(&mut r, &c),
            Ok(Message::Ack {
                chunks: ChunkSpec::Chunk32 { start: 1, end: 1 },
                delay_us: -1500
            })
        );
    }

    #[test]
    fn pex_v6_layout() {
        let c = CodecConfig::default();
        let a = SocketAddrV6::new(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1), 6778, 0, 0);
        let mut out = Vec::new();
        Message::PexResV6(a).write(&c, &mut out).unwrap();
        assert_eq!(out.len(), 1 + 16 + 2);
        assert_eq!(&out[..3], &[12, 0x20, 0x01]);
        assert_eq!(&out[17..], &[0x1a, 0x7a]);
        let mut r = Reader::new(&out, 0);
        assert_eq!(Message::read(&mut r, &c), Ok(Message::PexResV6(a)));
    }

    #[test]
    fn encode_errors_leave_output_alone() {
        let c = CodecConfig::default();
        let mut out = vec![9, 9];
        let cases: [(Message<'_>, EncodeError); 3] = [
            (
                Message::Integrity {
                    chunks: ChunkSpec::Chunk32 { start: 0, end: 0 },
                    hash: &[0; 19],
                },
                EncodeError::HashLength {
                    expected: 20,
                    found: 19,
                },
            ),
            (
                Message::Have(ChunkSpec::Chunk64 { start: 0, end: 0 }),
                EncodeError::AddressingMismatch {
                    expected: super::super::ChunkAddressing::Chunk32,
                    found: super::super::ChunkAddressing::Chunk64,
                },
            ),
            (
                Message::Request(ChunkSpec::Chunk32 { start: 2, end: 1 }),
                EncodeError::InvalidChunkSpec {
                    reason: "range starts after its end",
                },
            ),
        ];
        for (m, e) in cases {
            assert_eq!(m.write(&c, &mut out), Err(e));
            assert_eq!(out, [9, 9]);
        }
        let big = vec![0u8; 70_000];
        assert!(matches!(
            Message::PexResCert(&big).write(&c, &mut out),
            Err(EncodeError::ValueTooLong { .. })
        ));
        let h = Message::Handshake(Handshake {
            source_channel: 1,
            options: HandshakeOptions {
                merkle_hash_function: Some(9),
                ..Default::default()
            },
        });
        assert_eq!(
            h.write(&c, &mut out),
            Err(EncodeError::UnknownHashFunction { code: 9 })
        );
        assert_eq!(out, [9, 9]);
    }
}
