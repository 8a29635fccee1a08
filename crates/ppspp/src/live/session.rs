//! Sessions of a live stream: each run of a source is one session, and its signatures say
//! which. A source restarted with the same key (which keeps the stream's URI) numbers its
//! chunks from 0 again, so without this a munro recorded from an earlier run, still
//! recent enough to be accepted, could be fed to viewers of the next one at the same
//! chunks: they took the old stream as live and banned the real source when its munro for
//! those chunks came.
//!
//! The session travels in the signed timestamp itself: its lowest [`SESSION_BITS`] bits
//! (under 0.25 ms of an NTP timestamp's fraction) hold a tag the source picks at random
//! when it starts. The signature covers the timestamp, so the tag cannot be changed, and
//! nothing on the wire changes. A viewer follows the session of the first munro it
//! accepts; one of another session is ignored, unless it is newer than everything it
//! accepted, which only a restarted source can sign: then the viewer follows the new run.

/// Low bits of a signature's NTP timestamp that name the session.
pub const SESSION_BITS: u32 = 20;

const MASK: u64 = (1 << SESSION_BITS) - 1;

/// `ntp` (a 64-bit NTP timestamp) carrying `session` in its lowest bits.
pub const fn stamp(ntp: u64, session: u64) -> u64 {
    (ntp & !MASK) | (session & MASK)
}

/// The session a signature's timestamp names.
pub const fn session_of(timestamp: u64) -> u64 {
    timestamp & MASK
}

/// A session tag drawn from `seed` (the source's random seed): a mix of all its bits, so
/// seeds that differ anywhere give different tags but once in 2^20.
pub const fn session_from_seed(seed: u64) -> u64 {
    // splitmix64's finaliser.
    let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) & MASK
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_rides_in_the_lowest_bits_and_moves_the_time_under_a_quarter_millisecond() {
        let ntp = 0xE8AB_CDEF_1234_5678u64;
        let s = session_from_seed(42);
        let stamped = stamp(ntp, s);
        assert_eq!(session_of(stamped), s);
        // 2^20 of 2^32 fractions of a second.
        assert!(stamped.abs_diff(ntp) < 1 << SESSION_BITS);
        assert_eq!(stamped >> 32, ntp >> 32);
        assert_ne!(session_from_seed(1), session_from_seed(2));
    }
}
