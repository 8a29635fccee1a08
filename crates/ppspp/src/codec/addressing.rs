//! Chunk addressing methods (RFC 7574 §4.3–§4.5, handshake option 6): how a message
//! writes the chunks it names.

/// How chunk specs are written on the wire (handshake option 6). The discriminant is the
/// wire code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum ChunkAddressing {
    /// One 32-bit bin.
    Bin32 = 0,
    /// A 64-bit byte range `start..=end`.
    Byte64 = 1,
    /// A 32-bit chunk range `start..=end` (the RFC default, and what libswift sends).
    #[default]
    Chunk32 = 2,
    /// One 64-bit bin.
    Bin64 = 3,
    /// A 64-bit chunk range `start..=end`.
    Chunk64 = 4,
}

impl ChunkAddressing {
    /// Every method, in wire-code order.
    pub const ALL: [ChunkAddressing; 5] = [
        ChunkAddressing::Bin32,
        ChunkAddressing::Byte64,
        ChunkAddressing::Chunk32,
        ChunkAddressing::Bin64,
        ChunkAddressing::Chunk64,
    ];

    /// The method for a handshake option value, or `None` for codes above 4.
    pub const fn from_wire_code(code: u8) -> Option<ChunkAddressing> {
        match code {
            0 => Some(ChunkAddressing::Bin32),
            1 => Some(ChunkAddressing::Byte64),
            2 => Some(ChunkAddressing::Chunk32),
            3 => Some(ChunkAddressing::Bin64),
            4 => Some(ChunkAddressing::Chunk64),
            _ => None,
        }
    }

    /// The handshake option value naming this method.
    pub const fn wire_code(self) -> u8 {
        self as u8
    }

    /// True for the 32-bit methods; the live discard window has the same width.
    pub const fn is_32bit(self) -> bool {
        matches!(self, ChunkAddressing::Bin32 | ChunkAddressing::Chunk32)
    }

    /// Bytes taken by one chunk spec.
    pub const fn spec_len(self) -> usize {
        match self {
            ChunkAddressing::Bin32 => 4,
            ChunkAddressing::Bin64 | ChunkAddressing::Chunk32 => 8,
            ChunkAddressing::Byte64 | ChunkAddressing::Chunk64 => 16,
        }
    }
}
