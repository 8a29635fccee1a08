//! Chunk specifications (RFC 7574 §4.3–§4.5, digest §1.5): sets of chunks as written in
//! a message, in each chunk addressing method.

use super::addressing::ChunkAddressing;
use super::error::{DecodeError, EncodeError};
use super::reader::Reader;
use crate::Bin;
use crate::bin::ChunkRangeBins;

/// A set of chunks as written in a message. Ranges are inclusive at both ends.
///
/// Decoding keeps exactly what the peer sent (including bins such as
/// [`Bin::NONE`] and byte ranges that are not chunk-aligned), so a decoded spec re-encodes
/// to the same bytes. Only ranges whose start lies after their end are rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChunkSpec {
    /// One bin, written in 32 bits.
    Bin32(Bin),
    /// One bin, written in 64 bits.
    Bin64(Bin),
    /// Chunks `start..=end`, written as two 32-bit chunk indices.
    Chunk32 {
        /// First chunk index.
        start: u32,
        /// Last chunk index (inclusive).
        end: u32,
    },
    /// Chunks `start..=end`, written as two 64-bit chunk indices.
    Chunk64 {
        /// First chunk index.
        start: u64,
        /// Last chunk index (inclusive).
        end: u64,
    },
    /// Bytes `start..=end` of the content, written as two 64-bit byte offsets.
    Byte64 {
        /// First byte offset.
        start: u64,
        /// Last byte offset (inclusive).
        end: u64,
    },
}

impl ChunkSpec {
    /// The addressing method this spec is written in.
    pub const fn addressing(&self) -> ChunkAddressing {
        match self {
            ChunkSpec::Bin32(_) => ChunkAddressing::Bin32,
            ChunkSpec::Bin64(_) => ChunkAddressing::Bin64,
            ChunkSpec::Chunk32 { .. } => ChunkAddressing::Chunk32,
            ChunkSpec::Chunk64 { .. } => ChunkAddressing::Chunk64,
            ChunkSpec::Byte64 { .. } => ChunkAddressing::Byte64,
        }
    }

    /// The spec for `bin` in addressing method `addressing`. Byte ranges cover whole chunks of
    /// `chunk_size` bytes.
    ///
    /// Errors: a bin that does not fit 32 bits ([`EncodeError::BinNotRepresentable`]);
    /// [`Bin::NONE`] with a range method, [`Bin::ALL`] or any range past `u32::MAX` with
    /// chunk32, byte offsets past `u64::MAX` or `chunk_size == 0` with byte64
    /// ([`EncodeError::InvalidChunkSpec`]).
    pub fn from_bin(
        bin: Bin,
        addressing: ChunkAddressing,
        chunk_size: u32,
    ) -> Result<ChunkSpec, EncodeError> {
        if addressing == ChunkAddressing::Bin32 {
            return match bin.to_u32() {
                Some(_) => Ok(ChunkSpec::Bin32(bin)),
                None => Err(EncodeError::BinNotRepresentable { bin }),
            };
        }
        if addressing == ChunkAddressing::Bin64 {
            return Ok(ChunkSpec::Bin64(bin));
        }
        let Some((first, last)) = bin.chunk_range() else {
            return Err(EncodeError::InvalidChunkSpec {
                reason: "the empty bin has no range form",
            });
        };
        ChunkSpec::from_chunk_range(first, last, addressing, chunk_size)
    }

    /// The range spec for chunks `first..=last` in a range method (chunk32, chunk64,
    /// byte64). With a bin method the range must be exactly one aligned bin.
    pub fn from_chunk_range(
        first: u64,
        last: u64,
        addressing: ChunkAddressing,
        chunk_size: u32,
    ) -> Result<ChunkSpec, EncodeError> {
        if first > last {
            return Err(EncodeError::InvalidChunkSpec {
                reason: "range starts after its end",
            });
        }
        match addressing {
            ChunkAddressing::Chunk32 => match (u32::try_from(first), u32::try_from(last)) {
                (Ok(start), Ok(end)) => Ok(ChunkSpec::Chunk32 { start, end }),
                _ => Err(EncodeError::InvalidChunkSpec {
                    reason: "chunk range does not fit 32 bits",
                }),
            },
            ChunkAddressing::Chunk64 => Ok(ChunkSpec::Chunk64 {
                start: first,
                end: last,
            }),
            ChunkAddressing::Byte64 => {
                let cs = u64::from(chunk_size);
                if cs == 0 {
                    return Err(EncodeError::InvalidChunkSpec {
                        reason: "chunk size 0",
                    });
                }
                let start = first.checked_mul(cs);
                let end = last
                    .checked_add(1)
                    .and_then(|n| n.checked_mul(cs))
                    .and_then(|e| e.checked_sub(1));
                match (start, end) {
                    (Some(start), Some(end)) => Ok(ChunkSpec::Byte64 { start, end }),
                    _ => Err(EncodeError::InvalidChunkSpec {
                        reason: "byte range does not fit 64 bits",
                    }),
                }
            }
            ChunkAddressing::Bin32 | ChunkAddressing::Bin64 => {
                let mut bins = Bin::from_chunk_range(first, last);
                match (bins.next(), bins.next()) {
                    (Some(bin), None) if bin.chunk_range() == Some((first, last)) => {
                        ChunkSpec::from_bin(bin, addressing, chunk_size)
                    }
                    _ => Err(EncodeError::InvalidChunkSpec {
                        reason: "range is not a single aligned bin",
                    }),
                }
            }
        }
    }

    /// The chunks covered, as an inclusive `(first, last)` pair; `None` for
    /// [`Bin::NONE`], for an inverted range and (byte64) for `chunk_size == 0`.
    /// A byte range is widened to the chunks it touches.
    pub fn chunk_range(&self, chunk_size: u32) -> Option<(u64, u64)> {
        match *self {
            ChunkSpec::Bin32(bin) | ChunkSpec::Bin64(bin) => bin.chunk_range(),
            ChunkSpec::Chunk32 { start, end } => {
                (start <= end).then_some((u64::from(start), u64::from(end)))
            }
            ChunkSpec::Chunk64 { start, end } => (start <= end).then_some((start, end)),
            ChunkSpec::Byte64 { start, end } => {
                let cs = u64::from(chunk_size);
                if start > end || cs == 0 {
                    return None;
                }
                Some((start / cs, end / cs))
            }
        }
    }

    /// How many bytes a DATA of this spec carries when none of its chunks is short: the
    /// byte range's length, or its chunks times `chunk_size`. `None` when the spec covers
    /// no chunks or the length does not fit a `u64`.
    pub fn full_data_len(&self, chunk_size: u32) -> Option<u64> {
        match *self {
            ChunkSpec::Byte64 { start, end } => end.checked_sub(start)?.checked_add(1),
            _ => {
                let (first, last) = self.chunk_range(chunk_size)?;
                (last - first)
                    .checked_add(1)?
                    .checked_mul(u64::from(chunk_size))
            }
        }
    }

    /// The minimal aligned bins covering [`chunk_range`](Self::chunk_range), left to
    /// right (one bin for a bin spec; nothing when the range is empty).
    pub fn bins(&self, chunk_size: u32) -> ChunkSpecBins {
        match *self {
            ChunkSpec::Bin32(bin) | ChunkSpec::Bin64(bin) => {
                ChunkSpecBins::One(if bin.is_none() { None } else { Some(bin) })
            }
            _ => match self.chunk_range(chunk_size) {
                Some((first, last)) => ChunkSpecBins::Range(Bin::from_chunk_range(first, last)),
                None => ChunkSpecBins::One(None),
            },
        }
    }

    /// Checks that this spec can be written with method `addressing`.
    pub(crate) fn check(&self, addressing: ChunkAddressing) -> Result<(), EncodeError> {
        if self.addressing() != addressing {
            return Err(EncodeError::AddressingMismatch {
                expected: addressing,
                found: self.addressing(),
            });
        }
        let inverted = match *self {
            ChunkSpec::Bin32(bin) => {
                if bin.to_u32().is_none() {
                    return Err(EncodeError::BinNotRepresentable { bin });
                }
                false
            }
            ChunkSpec::Bin64(_) => false,
            ChunkSpec::Chunk32 { start, end } => start > end,
            ChunkSpec::Chunk64 { start, end } | ChunkSpec::Byte64 { start, end } => start > end,
        };
        if inverted {
            return Err(EncodeError::InvalidChunkSpec {
                reason: "range starts after its end",
            });
        }
        Ok(())
    }

    /// Appends the wire form (no checks: call [`check`](Self::check) first).
    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        match *self {
            ChunkSpec::Bin32(bin) => out.extend_from_slice(&bin.to_u32_or_none().to_be_bytes()),
            ChunkSpec::Bin64(bin) => out.extend_from_slice(&bin.raw().to_be_bytes()),
            ChunkSpec::Chunk32 { start, end } => {
                out.extend_from_slice(&start.to_be_bytes());
                out.extend_from_slice(&end.to_be_bytes());
            }
            ChunkSpec::Chunk64 { start, end } | ChunkSpec::Byte64 { start, end } => {
                out.extend_from_slice(&start.to_be_bytes());
                out.extend_from_slice(&end.to_be_bytes());
            }
        }
    }

    pub(crate) fn read(
        r: &mut Reader<'_>,
        addressing: ChunkAddressing,
    ) -> Result<ChunkSpec, DecodeError> {
        let offset = r.offset();
        let spec = match addressing {
            ChunkAddressing::Bin32 => ChunkSpec::Bin32(Bin::from_u32(r.u32("bin32 chunk spec")?)),
            ChunkAddressing::Bin64 => ChunkSpec::Bin64(Bin::from_raw(r.u64("bin64 chunk spec")?)),
            ChunkAddressing::Chunk32 => {
                // Take both halves at once so a truncated spec reports its full size.
                let what = "chunk32 chunk spec";
                let mut sub = Reader::new(r.take(8, what)?, offset);
                let start = sub.u32(what)?;
                let end = sub.u32(what)?;
                ChunkSpec::Chunk32 { start, end }
            }
            ChunkAddressing::Chunk64 | ChunkAddressing::Byte64 => {
                let what = if addressing == ChunkAddressing::Chunk64 {
                    "chunk64 chunk spec"
                } else {
                    "byte64 chunk spec"
                };
                let mut sub = Reader::new(r.take(16, what)?, offset);
                let start = sub.u64(what)?;
                let end = sub.u64(what)?;
                if addressing == ChunkAddressing::Chunk64 {
                    ChunkSpec::Chunk64 { start, end }
                } else {
                    ChunkSpec::Byte64 { start, end }
                }
            }
        };
        let (start, end) = match spec {
            ChunkSpec::Chunk32 { start, end } => (u64::from(start), u64::from(end)),
            ChunkSpec::Chunk64 { start, end } | ChunkSpec::Byte64 { start, end } => (start, end),
            ChunkSpec::Bin32(_) | ChunkSpec::Bin64(_) => return Ok(spec),
        };
        if start > end {
            return Err(DecodeError::InvalidChunkSpec { offset, start, end });
        }
        Ok(spec)
    }
}

/// Iterator returned by [`ChunkSpec::bins`].
#[derive(Debug, Clone)]
pub enum ChunkSpecBins {
    /// At most one bin: the spec's own bin, or nothing for [`Bin::NONE`] or an empty range.
    One(Option<Bin>),
    /// A range spec: the minimal aligned bins covering its chunks.
    Range(ChunkRangeBins),
}

impl Iterator for ChunkSpecBins {
    type Item = Bin;

    fn next(&mut self) -> Option<Bin> {
        match self {
            ChunkSpecBins::One(b) => b.take(),
            ChunkSpecBins::Range(it) => it.next(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(layer: u32, offset: u64) -> Bin {
        Bin::new(layer, offset).unwrap()
    }

    #[test]
    fn wire_codes() {
        for (i, addressing) in ChunkAddressing::ALL.iter().enumerate() {
            assert_eq!(addressing.wire_code() as usize, i);
            assert_eq!(ChunkAddressing::from_wire_code(i as u8), Some(*addressing));
        }
        assert_eq!(ChunkAddressing::from_wire_code(5), None);
        assert_eq!(ChunkAddressing::default(), ChunkAddressing::Chunk32);
    }

    #[test]
    fn from_bin_in_every_method() {
        let x = b(2, 1); // chunks 4..=7, bin 11
        assert_eq!(
            ChunkSpec::from_bin(x, ChunkAddressing::Chunk32, 1024),
            Ok(ChunkSpec::Chunk32 { start: 4, end: 7 })
        );
        assert_eq!(
            ChunkSpec::from_bin(x, ChunkAddressing::Byte64, 1024),
            Ok(ChunkSpec::Byte64 {
                start: 4096,
                end: 8191
            })
        );
        assert_eq!(
            ChunkSpec::from_bin(x, ChunkAddressing::Bin32, 1024),
            Ok(ChunkSpec::Bin32(x))
        );
        assert_eq!(
            ChunkSpec::from_bin(b(40, 18), ChunkAddressing::Bin32, 1024),
            Err(EncodeError::BinNotRepresentable { bin: b(40, 18) })
        );
        assert!(ChunkSpec::from_bin(Bin::NONE, ChunkAddressing::Chunk64, 1024).is_err());
        assert!(ChunkSpec::from_bin(Bin::ALL, ChunkAddressing::Chunk32, 1024).is_err());
        assert!(ChunkSpec::from_bin(Bin::ALL, ChunkAddressing::Byte64, 1024).is_err());
        assert!(ChunkSpec::from_bin(x, ChunkAddressing::Byte64, 0).is_err());
        assert_eq!(
            ChunkSpec::from_bin(Bin::ALL, ChunkAddressing::Chunk64, 1024),
            Ok(ChunkSpec::Chunk64 {
                start: 0,
                end: (1 << 63) - 1
            })
        );
        for addressing in ChunkAddressing::ALL {
            let spec = ChunkSpec::from_bin(x, addressing, 1024).unwrap();
            assert_eq!(spec.addressing(), addressing);
            assert_eq!(spec.chunk_range(1024), Some((4, 7)));
            assert_eq!(spec.bins(1024).collect::<Vec<_>>(), [x]);
        }
    }

    #[test]
    fn ranges_to_bins() {
        let spec = ChunkSpec::Chunk32 { start: 5, end: 25 };
        let raws: Vec<u64> = spec.bins(1024).map(Bin::raw).collect();
        assert_eq!(raws, [10, 13, 23, 39, 49]);
        // A byte range touching chunks 1..=2 partially.
        let spec = ChunkSpec::Byte64 {
            start: 1500,
            end: 2049,
        };
        assert_eq!(spec.chunk_range(1024), Some((1, 2)));
        assert_eq!(spec.chunk_range(0), None);
        assert_eq!(ChunkSpec::Bin64(Bin::NONE).bins(1).count(), 0);
        assert_eq!(ChunkSpec::Chunk64 { start: 3, end: 2 }.chunk_range(1), None);
        assert_eq!(
            ChunkSpec::from_chunk_range(4, 7, ChunkAddressing::Bin64, 1),
            Ok(ChunkSpec::Bin64(b(2, 1)))
        );
        assert!(ChunkSpec::from_chunk_range(4, 8, ChunkAddressing::Bin64, 1).is_err());
        assert!(ChunkSpec::from_chunk_range(8, 4, ChunkAddressing::Chunk64, 1).is_err());
    }

    #[test]
    fn read_rejects_inverted_ranges_but_keeps_special_bins() {
        let bytes = [0, 0, 0, 5, 0, 0, 0, 4];
        let mut r = Reader::new(&bytes, 5);
        assert_eq!(
            ChunkSpec::read(&mut r, ChunkAddressing::Chunk32),
            Err(DecodeError::InvalidChunkSpec {
                offset: 5,
                start: 5,
                end: 4
            })
        );
        let ff = [0xFF; 8];
        let mut r = Reader::new(&ff, 0);
        assert_eq!(
            ChunkSpec::read(&mut r, ChunkAddressing::Bin32),
            Ok(ChunkSpec::Bin32(Bin::NONE))
        );
        let mut r = Reader::new(&ff, 0);
        assert_eq!(
            ChunkSpec::read(&mut r, ChunkAddressing::Bin64),
            Ok(ChunkSpec::Bin64(Bin::NONE))
        );
        let mut r = Reader::new(&ff[..7], 0);
        assert!(matches!(
            ChunkSpec::read(&mut r, ChunkAddressing::Chunk32),
            Err(DecodeError::Truncated {
                needed: 8,
                available: 7,
                ..
            })
        ));
    }
}
