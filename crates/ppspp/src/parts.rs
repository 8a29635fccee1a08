//! Content made of parts: an HLS or DASH rendition whose media sits in several files (a file
//! per segment) or in byte ranges of one file is one PPSPP content, its parts concatenated
//! in playlist order. [`PartMap`] maps a byte range of the content back onto the parts it
//! covers, so that an HTTP origin asks each file for its own bytes and a seeder reads them.

use core::ops::Range;

/// The parts' lengths in content order, and where each starts in the content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartMap {
    /// `starts[i]` is where part `i` begins; the last entry is the content's length.
    starts: Vec<u64>,
}

/// A piece of a content range that lies in one part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartSlice {
    /// The part's index, in content order.
    pub part: usize,
    /// The bytes within the part (0 is the part's first byte).
    pub within: Range<u64>,
}

/// Why a list of part lengths makes no content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PartMapError {
    /// A part of no bytes (it would be nowhere in the content).
    EmptyPart(usize),
    /// The lengths add up past `u64::MAX`.
    TooLong,
}

impl core::fmt::Display for PartMapError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            PartMapError::EmptyPart(i) => write!(f, "part {i} has no bytes"),
            PartMapError::TooLong => write!(f, "the parts add up to more than 2^64 bytes"),
        }
    }
}

impl PartMap {
    /// The content of parts of these lengths, in order.
    pub fn new(lengths: impl IntoIterator<Item = u64>) -> Result<PartMap, PartMapError> {
        let mut starts = vec![0u64];
        for (i, len) in lengths.into_iter().enumerate() {
            if len == 0 {
                return Err(PartMapError::EmptyPart(i));
            }
            let end = starts[i].checked_add(len).ok_or(PartMapError::TooLong)?;
            starts.push(end);
        }
        Ok(PartMap { starts })
    }

    /// The content's length: the parts' lengths summed.
    pub fn len(&self) -> u64 {
        self.starts.last().copied().unwrap_or(0)
    }

    /// Whether there is no part.
    pub fn is_empty(&self) -> bool {
        self.starts.len() == 1
    }

    /// How many parts.
    pub fn part_count(&self) -> usize {
        self.starts.len() - 1
    }

    /// Where part `part` lies in the content (`None` past the last part).
    pub fn part_range(&self, part: usize) -> Option<Range<u64>> {
        Some(*self.starts.get(part)?..*self.starts.get(part + 1)?)
    }

    /// The part holding content byte `offset` (`None` at or past the end).
    pub fn part_at(&self, offset: u64) -> Option<usize> {
        if offset >= self.len() {
            return None;
        }
        // The last start at or before `offset`.
        Some(self.starts.partition_point(|&s| s <= offset) - 1)
    }

    /// The pieces of content bytes `range` (clipped to the content), part by part in order;
    /// none for an empty range.
    pub fn locate(&self, range: Range<u64>) -> Vec<PartSlice> {
        let end = range.end.min(self.len());
        let mut out = Vec::new();
        let Some(mut part) = self.part_at(range.start) else {
            return out;
        };
        let mut at = range.start;
        while at < end {
            let (start, part_end) = (self.starts[part], self.starts[part + 1]);
            let stop = end.min(part_end);
            out.push(PartSlice {
                part,
                within: at - start..stop - start,
            });
            at = stop;
            part += 1;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map() -> PartMap {
        // An initialisation segment of 10 bytes, then segments of 100, 50 and 7.
        PartMap::new([10, 100, 50, 7]).unwrap()
    }

    fn slice(part: usize, within: Range<u64>) -> PartSlice {
        PartSlice { part, within }
    }

    #[test]
    fn lengths_make_starts_and_a_total() {
        let m = map();
        assert_eq!(m.len(), 167);
        assert_eq!(m.part_count(), 4);
        assert_eq!(m.part_range(0), Some(0..10));
        assert_eq!(m.part_range(3), Some(160..167));
        assert_eq!(m.part_range(4), None);
    }

    #[test]
    fn every_byte_is_in_the_part_that_covers_it() {
        let m = map();
        assert_eq!(m.part_at(0), Some(0));
        assert_eq!(m.part_at(9), Some(0));
        assert_eq!(m.part_at(10), Some(1));
        assert_eq!(m.part_at(109), Some(1));
        assert_eq!(m.part_at(110), Some(2));
        assert_eq!(m.part_at(166), Some(3));
        assert_eq!(m.part_at(167), None);
    }

    #[test]
    fn a_range_inside_one_part_is_one_slice() {
        assert_eq!(map().locate(20..30), vec![slice(1, 10..20)]);
        assert_eq!(map().locate(0..10), vec![slice(0, 0..10)]);
    }

    #[test]
    fn a_range_across_parts_is_cut_at_their_edges() {
        // A chunk of 64 bytes at offset 64: the end of segment 1, the start of segment 2.
        assert_eq!(
            map().locate(64..128),
            vec![slice(1, 54..100), slice(2, 0..18)]
        );
        assert_eq!(
            map().locate(5..167),
            vec![
                slice(0, 5..10),
                slice(1, 0..100),
                slice(2, 0..50),
                slice(3, 0..7)
            ]
        );
    }

    #[test]
    fn ranges_are_clipped_to_the_content() {
        // The last chunk of 64-byte chunks runs past the end.
        assert_eq!(
            map().locate(128..192),
            vec![slice(2, 18..50), slice(3, 0..7)]
        );
        assert_eq!(map().locate(167..200), vec![]);
        assert_eq!(map().locate(30..30), vec![]);
    }

    #[test]
    fn empty_parts_and_overflow_are_refused() {
        assert_eq!(PartMap::new([5, 0]), Err(PartMapError::EmptyPart(1)));
        assert_eq!(PartMap::new([u64::MAX, 1]), Err(PartMapError::TooLong));
        assert!(PartMap::new([]).unwrap().is_empty());
    }
}
