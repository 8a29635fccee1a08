//! A bounds-checked big-endian cursor: every read returns `Err` instead of panicking.

use super::error::DecodeError;

#[derive(Debug, Clone)]
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// Offset of `bytes[0]` within the datagram, for error reports.
    base: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8], base: usize) -> Self {
        Reader {
            bytes,
            pos: 0,
            base,
        }
    }

    /// Offset of the next byte within the datagram.
    pub(crate) fn offset(&self) -> usize {
        self.base.saturating_add(self.pos)
    }

    pub(crate) fn position(&self) -> usize {
        self.pos
    }

    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len().saturating_sub(self.pos)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// The next `n` bytes, borrowed.
    pub(crate) fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], DecodeError> {
        let rest = self.bytes.get(self.pos..).unwrap_or(&[]);
        match rest.get(..n) {
            Some(s) => {
                self.pos = self.pos.saturating_add(n);
                Ok(s)
            }
            None => Err(DecodeError::Truncated {
                offset: self.offset(),
                needed: n,
                available: rest.len(),
                what,
            }),
        }
    }

    /// Everything that is left (possibly nothing).
    pub(crate) fn rest(&mut self) -> &'a [u8] {
        let rest = self.bytes.get(self.pos..).unwrap_or(&[]);
        self.pos = self.bytes.len();
        rest
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], DecodeError> {
        let s = self.take(N, what)?;
        match s.first_chunk::<N>() {
            Some(a) => Ok(*a),
            None => Err(DecodeError::Truncated {
                offset: self.offset(),
                needed: N,
                available: s.len(),
                what,
            }),
        }
    }

    pub(crate) fn u8(&mut self, what: &'static str) -> Result<u8, DecodeError> {
        Ok(self.array::<1>(what)?[0])
    }

    pub(crate) fn u16(&mut self, what: &'static str) -> Result<u16, DecodeError> {
        Ok(u16::from_be_bytes(self.array(what)?))
    }

    pub(crate) fn u32(&mut self, what: &'static str) -> Result<u32, DecodeError> {
        Ok(u32::from_be_bytes(self.array(what)?))
    }

    pub(crate) fn u64(&mut self, what: &'static str) -> Result<u64, DecodeError> {
        Ok(u64::from_be_bytes(self.array(what)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_big_endian_and_reports_truncation() {
        let bytes = [0xab, 0xab, 0xcd, 0xab, 0xcd, 0xef, 0x01, 0x09];
        let mut r = Reader::new(&bytes, 4);
        assert_eq!(r.u8("a").unwrap(), 0xab);
        assert_eq!(r.u16("b").unwrap(), 0xabcd);
        assert_eq!(r.u32("c").unwrap(), 0xabcd_ef01);
        assert_eq!(r.offset(), 11);
        assert_eq!(
            r.u64("d"),
            Err(DecodeError::Truncated {
                offset: 11,
                needed: 8,
                available: 1,
                what: "d"
            })
        );
        // A failed read consumes nothing.
        assert_eq!(r.remaining(), 1);
        assert_eq!(r.rest(), &[0x09]);
        assert!(r.is_empty());
        assert_eq!(r.rest(), &[] as &[u8]);
        assert!(r.take(usize::MAX, "huge").is_err());
    }
}
