//! Live streams: what a channel keeps of its peer's view of the stream. Which munro it was
//! told, whether what it announces is of our run of the source, the chunk signatures it
//! sent ahead of their chunks (Sign All), and its discard window.

use super::chunk_signature::ChunkSignature;

/// Sign All: signatures kept per channel while their chunks are on the way (they travel
/// in the same datagram; a few cover a burst of reordering).
const PENDING_SIGNATURES: usize = 8;

#[derive(Debug)]
pub(crate) struct LivePeer {
    /// The edge when the newest munro was last sent here on its own (tune-in).
    munro_told: u64,
    /// The peer's last munro was of another run of the source than ours: what it
    /// announces is of that run, and is not taken (asked for, its chunks would fail to
    /// verify against our run's munros and get an honest peer banned).
    other_run: bool,
    /// Sign All: signatures received ahead of the chunks they sign (a bounded few).
    signatures: Vec<ChunkSignature>,
    /// The peer's discard window (handshake option 7), applied to what it announces.
    window: Option<u64>,
}

impl LivePeer {
    pub(crate) fn new() -> LivePeer {
        LivePeer {
            munro_told: 0,
            other_run: false,
            signatures: Vec::new(),
            window: None,
        }
    }

    /// The edge when the newest munro was last sent to the peer on its own.
    #[inline]
    pub(crate) fn munro_told(&self) -> u64 {
        self.munro_told
    }

    /// The newest munro went to the peer with the edge at `edge`.
    #[inline]
    pub(crate) fn told_munro(&mut self, edge: u64) {
        self.munro_told = edge;
    }

    /// Whether what the peer announces is of another run of the source than ours.
    #[inline]
    pub(crate) fn of_other_run(&self) -> bool {
        self.other_run
    }

    /// The peer's munros (or signatures) are of our run, or of another: what it announces
    /// is taken, or not.
    #[inline]
    pub(crate) fn set_other_run(&mut self, other: bool) {
        self.other_run = other;
    }

    /// The peer's discard window, if it gave one.
    #[inline]
    pub(crate) fn window(&self) -> Option<u64> {
        self.window
    }

    /// The peer's handshake gave its discard window (or none).
    #[inline]
    pub(crate) fn set_window(&mut self, window: Option<u64>) {
        self.window = window;
    }

    /// Keeps a signature until its chunk comes: one for the same chunk is replaced, and
    /// past the bound the oldest gives way.
    pub(super) fn keep_signature(&mut self, sig: ChunkSignature) {
        self.signatures.retain(|s| s.chunk != sig.chunk);
        if self.signatures.len() >= PENDING_SIGNATURES {
            self.signatures.remove(0);
        }
        self.signatures.push(sig);
    }

    /// The signature the peer sent for `chunk`, if any, which is not kept any more.
    pub(super) fn take_signature(&mut self, chunk: u64) -> Option<ChunkSignature> {
        let at = self.signatures.iter().position(|s| s.chunk == chunk);
        at.map(|i| self.signatures.remove(i))
    }

    /// Signatures for chunks below `floor` (out of the window) are dropped.
    pub(crate) fn drop_signatures_below(&mut self, floor: u64) {
        self.signatures.retain(|s| s.chunk >= floor);
    }

    /// The peer's stream restarted: its signatures and the munro told are of a run that
    /// no longer exists.
    pub(crate) fn forget_run(&mut self) {
        self.signatures.clear();
        self.munro_told = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sig(chunk: u64, timestamp: u64) -> ChunkSignature {
        ChunkSignature {
            chunk,
            timestamp,
            signature: vec![1, 2],
        }
    }

    fn kept(l: &LivePeer) -> Vec<(u64, u64)> {
        l.signatures
            .iter()
            .map(|s| (s.chunk, s.timestamp))
            .collect()
    }

    #[test]
    fn a_signature_is_taken_once() {
        let mut l = LivePeer::new();
        l.keep_signature(sig(4, 1));
        assert!(l.take_signature(5).is_none());
        assert_eq!(l.take_signature(4).map(|s| s.timestamp), Some(1));
        assert!(l.take_signature(4).is_none(), "taken");
    }

    #[test]
    fn a_new_signature_for_a_chunk_replaces_the_old() {
        let mut l = LivePeer::new();
        l.keep_signature(sig(4, 1));
        l.keep_signature(sig(5, 1));
        l.keep_signature(sig(4, 2));
        assert_eq!(kept(&l), [(5, 1), (4, 2)]);
    }

    #[test]
    fn past_the_bound_the_oldest_signature_gives_way() {
        let mut l = LivePeer::new();
        for c in 0..=PENDING_SIGNATURES as u64 {
            l.keep_signature(sig(c, 0));
        }
        assert_eq!(l.signatures.len(), PENDING_SIGNATURES);
        assert!(l.take_signature(0).is_none());
        assert!(l.take_signature(PENDING_SIGNATURES as u64).is_some());
    }

    #[test]
    fn signatures_below_the_floor_are_dropped() {
        let mut l = LivePeer::new();
        for c in [1, 5, 3, 8] {
            l.keep_signature(sig(c, 0));
        }
        l.drop_signatures_below(4);
        assert_eq!(kept(&l), [(5, 0), (8, 0)]);
    }

    #[test]
    fn a_restart_forgets_the_run_but_not_the_window() {
        let mut l = LivePeer::new();
        l.set_window(Some(64));
        l.told_munro(100);
        l.set_other_run(true);
        l.keep_signature(sig(99, 0));
        l.forget_run();
        assert_eq!(l.munro_told(), 0);
        assert!(l.take_signature(99).is_none());
        assert_eq!(l.window(), Some(64));
        assert!(l.of_other_run(), "told by the caller, not assumed");
    }
}
