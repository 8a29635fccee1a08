//! Message types (RFC 7574 §8): the type byte that starts every message.

/// Message type codes. The discriminant is the wire code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum MessageType {
    /// HANDSHAKE: opens or closes a channel and carries the protocol options.
    Handshake = 0,
    /// DATA: one chunk (or range) of content.
    Data = 1,
    /// ACK: acknowledges received DATA, with a delay sample for congestion control.
    Ack = 2,
    /// HAVE: advertises chunks the sender has verified.
    Have = 3,
    /// INTEGRITY: the hash of one Merkle tree node.
    Integrity = 4,
    /// PEX_RESv4: an IPv4 peer address.
    PexResV4 = 5,
    /// PEX_REQ: asks for peer addresses.
    PexReq = 6,
    /// SIGNED_INTEGRITY: a signature over a live chunk range.
    SignedIntegrity = 7,
    /// REQUEST: asks for chunks.
    Request = 8,
    /// CANCEL: withdraws an earlier REQUEST.
    Cancel = 9,
    /// CHOKE: the sender will not answer requests.
    Choke = 10,
    /// UNCHOKE: the sender answers requests again.
    Unchoke = 11,
    /// PEX_RESv6: an IPv6 peer address.
    PexResV6 = 12,
    /// PEX_REScert: a peer address inside a signed membership certificate.
    PexResCert = 13,
}

impl MessageType {
    /// Every type, in code order.
    pub const ALL: [MessageType; 14] = [
        MessageType::Handshake,
        MessageType::Data,
        MessageType::Ack,
        MessageType::Have,
        MessageType::Integrity,
        MessageType::PexResV4,
        MessageType::PexReq,
        MessageType::SignedIntegrity,
        MessageType::Request,
        MessageType::Cancel,
        MessageType::Choke,
        MessageType::Unchoke,
        MessageType::PexResV6,
        MessageType::PexResCert,
    ];

    /// The type with this code, or `None` for 14–255.
    pub const fn from_code(code: u8) -> Option<MessageType> {
        if (code as usize) < MessageType::ALL.len() {
            Some(MessageType::ALL[code as usize])
        } else {
            None
        }
    }

    /// The type byte on the wire.
    pub const fn code(self) -> u8 {
        self as u8
    }
}
