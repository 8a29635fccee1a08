//! How a live source cuts a media segment into chunks, so that the segment starts a chunk
//! and ends a signing group: its munros cover it and nothing else, and a viewer can take
//! it whole from a web server and check it against them. A viewer given the segment's
//! length and chunk count finds the same chunks.
//!
//! The chunks are full but for the tail: the last full chunk and what follows it are split
//! evenly (the first pieces a byte longer) into as many chunks as complete the signing
//! group, or, for a tail too short to give each a byte, into as few as hold it.

/// Chunks the tail of a segment (`tail` bytes, the last full chunk and what follows) is
/// cut into, when `emitted` chunks of the stream came before it.
pub fn tail_pieces(tail: usize, chunk_size: usize, group: u64, emitted: u64) -> usize {
    let chunk_size = chunk_size.max(1);
    let group = group.max(1);
    let least = tail.div_ceil(chunk_size) as u64;
    let aligned = (least..least + group)
        .find(|p| (emitted + p).is_multiple_of(group))
        .unwrap_or(least);
    if aligned as usize <= tail {
        aligned as usize
    } else {
        least as usize
    }
}

/// The lengths of `pieces` chunks holding `len` bytes evenly, the first ones a byte longer.
pub fn split_evenly(len: usize, pieces: usize) -> impl Iterator<Item = usize> {
    let pieces = pieces.max(1);
    let (base, extra) = (len / pieces, len % pieces);
    (0..pieces).map(move |i| base + usize::from(i < extra))
}

/// Full chunks before a segment's tail, and the tail's length.
fn full_and_tail(len: usize, chunk_size: usize) -> (usize, usize) {
    let chunk_size = chunk_size.max(1);
    // The last full chunk is held back into the tail, so that the tail is never empty.
    let full = (len / chunk_size).saturating_sub(1);
    (full, len - full * chunk_size)
}

/// How many chunks a source cuts a whole segment of `len` bytes into, when `emitted`
/// chunks of the stream came before it.
pub fn segment_chunk_count(len: usize, chunk_size: usize, group: u64, emitted: u64) -> u64 {
    let (full, tail) = full_and_tail(len, chunk_size);
    if tail == 0 {
        return 0;
    }
    (full + tail_pieces(tail, chunk_size, group, emitted + full as u64)) as u64
}

/// The lengths of the `count` chunks a segment of `len` bytes was cut into; `None` if no
/// source cuts it so (each chunk holds 1 to `chunk_size` bytes).
pub fn segment_chunk_lengths(len: usize, chunk_size: usize, count: u64) -> Option<Vec<usize>> {
    let (full, tail) = full_and_tail(len, chunk_size);
    let pieces = usize::try_from(count).ok()?.checked_sub(full)?;
    if tail == 0 || pieces == 0 || pieces > tail || tail.div_ceil(chunk_size.max(1)) > pieces {
        return None;
    }
    let mut out = vec![chunk_size; full];
    out.extend(split_evenly(tail, pieces));
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_segment_ends_its_signing_group_and_its_chunks_are_found_again_from_the_count() {
        for cs in [1usize, 7, 1024] {
            for group in [1u64, 2, 16] {
                for emitted in [0u64, 16, 32] {
                    for len in [1usize, 5, 6, 7, 100, 1023, 1024, 1025, 4096, 20_000] {
                        let count = segment_chunk_count(len, cs, group, emitted);
                        let lengths = segment_chunk_lengths(len, cs, count).unwrap();
                        assert_eq!(lengths.len() as u64, count);
                        assert_eq!(lengths.iter().sum::<usize>(), len);
                        assert!(lengths.iter().all(|&l| (1..=cs).contains(&l)));
                        // A tail of a chunk or more has a byte for every piece it needs.
                        if len >= cs && cs > group as usize {
                            assert!(
                                (emitted + count).is_multiple_of(group),
                                "{cs} {group} {len}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn counts_no_source_makes_are_refused() {
        // 10 bytes in chunks of 4: at least 3 chunks, at most 10.
        assert!(segment_chunk_lengths(10, 4, 2).is_none());
        assert!(segment_chunk_lengths(10, 4, 3).is_some());
        assert!(segment_chunk_lengths(10, 4, 7).is_some());
        assert!(segment_chunk_lengths(0, 4, 1).is_none());
        assert!(segment_chunk_lengths(3, 4, 4).is_none());
        assert!(segment_chunk_lengths(10, 4, u64::MAX).is_none());
    }
}
