//! Segments of a live presentation from the site's web server: a media segment fetched
//! whole, with its signed record and the munros over it from the presentation's manifest
//! (`live::presentation`), is checked as a peer's chunks are (the munros' signatures and
//! dates, the run of the source, every chunk under its munro) and kept, so it is relayed
//! to peers as well. Neither the server nor anyone on the way can make a viewer keep a
//! byte the source did not sign.

use super::event::Event;
use super::{Engine, PeerAddr};
use crate::live::{LiveError, LivePart, SignedMunro, SignedWithin};
use crate::store::ChunkStore;
use crate::time::Time;
use core::fmt;

/// Why a live part was not taken.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LivePartError {
    /// This engine does not view a live stream.
    NotAViewer,
    /// The part's record is not signed by the rendition's key.
    BadSignature,
    /// The part's record is dated too long ago, or ahead of our clock.
    Date {
        /// Its timestamp (NTP).
        timestamp: u64,
    },
    /// The bytes are not as long as the record says.
    WrongLength {
        /// The record's length.
        expected: u64,
        /// The bytes'.
        got: usize,
    },
    /// No source cuts the record's length into its chunk count.
    BadChunkCount,
    /// The munros given do not cover the part's chunks exactly, one after another.
    NotCovered,
    /// A munro was refused (bad signature, date, another run of the source…).
    Munro(LiveError),
    /// The bytes do not hash to their munros: not what the source signed.
    Mismatch(LiveError),
    /// The store refused a chunk (reported as [`Event::StoreFailed`] too).
    Store,
}

impl fmt::Display for LivePartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LivePartError::NotAViewer => write!(f, "this engine does not view a live stream"),
            LivePartError::BadSignature => {
                write!(
                    f,
                    "the segment's record is not signed by the rendition's key"
                )
            }
            LivePartError::Date { timestamp } => write!(
                f,
                "the segment's record is dated outside the accepted time (NTP {timestamp:#x})"
            ),
            LivePartError::WrongLength { expected, got } => {
                write!(f, "the segment is {got} bytes, its record says {expected}")
            }
            LivePartError::BadChunkCount => {
                write!(
                    f,
                    "the segment's record gives a chunk count no source makes"
                )
            }
            LivePartError::NotCovered => {
                write!(
                    f,
                    "the munros given do not cover the segment's chunks exactly"
                )
            }
            LivePartError::Munro(e) => write!(f, "a munro of the segment was refused: {e}"),
            LivePartError::Mismatch(e) => {
                write!(f, "the segment is not what the source signed: {e}")
            }
            LivePartError::Store => write!(f, "the store refused a chunk of the segment"),
        }
    }
}

impl core::error::Error for LivePartError {}

impl<A: PeerAddr, S: ChunkStore> Engine<A, S> {
    /// Whether `signature` is the rendition key's over `part` and the record is recent
    /// (within `live_max_age` of our clock, not ahead of it by more than
    /// `live_max_ahead`): what a page checks before it maps a playlist's segment to chunks.
    pub fn check_live_part(
        &self,
        now: Time,
        part: &LivePart,
        signature: &[u8],
    ) -> Result<(), LivePartError> {
        let info = self.live_info().ok_or(LivePartError::NotAViewer)?;
        if !part.verify(&info.key, signature) {
            return Err(LivePartError::BadSignature);
        }
        let within = self.signed_within(now);
        if !(within.not_before..=within.not_after).contains(&part.timestamp) {
            return Err(LivePartError::Date {
                timestamp: part.timestamp,
            });
        }
        Ok(())
    }

    /// A live part from the web server: `data`, the segment `part` names (signed with
    /// `signature`), and `munros`, the munros over its chunks, in order. Everything is
    /// checked before anything is kept but the munros, which are genuine on their own.
    /// Returns how many chunks were new here; they are reported as
    /// [`Event::ChunkFromOrigin`] and announced to peers.
    pub fn handle_live_part(
        &mut self,
        now: Time,
        part: &LivePart,
        signature: &[u8],
        munros: &[SignedMunro],
        data: &[u8],
    ) -> Result<u64, LivePartError> {
        self.check_live_part(now, part, signature)?;
        if data.len() as u64 != part.length {
            return Err(LivePartError::WrongLength {
                expected: part.length,
                got: data.len(),
            });
        }
        let chunk_size = self.content.chunk_size;
        let lengths = part
            .chunk_lengths(chunk_size)
            .ok_or(LivePartError::BadChunkCount)?;
        let sign_all = self.signs_every_chunk();
        let mut next = part.first_chunk;
        for m in munros {
            let Some((first, last)) = m.bin.chunk_range() else {
                return Err(LivePartError::NotCovered);
            };
            // Under Sign All each signature covers one chunk's bytes: a wider "munro" would
            // leave the chunks after its first unchecked.
            if sign_all && first != last {
                return Err(LivePartError::NotCovered);
            }
            if first != next {
                return Err(LivePartError::NotCovered);
            }
            next = last + 1;
        }
        if next != part.end_chunk() {
            return Err(LivePartError::NotCovered);
        }
        let mut chunks = Vec::with_capacity(lengths.len());
        let mut at = 0;
        for len in lengths {
            chunks.push(&data[at..at + len]);
            at += len;
        }
        // A viewer joins a presentation some segments behind the edge.
        let within = self.signed_within_tuning_in(now, self.config.live_part_tune_in_max_age);
        for m in munros {
            let offset = (m.bin.base_offset() - part.first_chunk) as usize;
            let span = &chunks[offset..offset + m.bin.base_length() as usize];
            self.take_part_munro(m, span, within, sign_all)?;
        }
        let mut kept = 0;
        for (i, bytes) in chunks.iter().enumerate() {
            let chunk = part.first_chunk + i as u64;
            let Some(leaf) = crate::Bin::chunk(chunk) else {
                continue;
            };
            if self.have.is_filled(leaf) {
                continue;
            }
            if !self.store_chunk(chunk, bytes) {
                return Err(LivePartError::Store);
            }
            self.cancel_at_peers(chunk);
            self.chunk_kept(chunk, bytes.len(), Event::ChunkFromOrigin { chunk });
            kept += 1;
        }
        Ok(kept)
    }

    /// Takes munro `m` of a part and checks its chunks (`span`) under it.
    fn take_part_munro(
        &mut self,
        m: &SignedMunro,
        span: &[&[u8]],
        within: SignedWithin,
        sign_all: bool,
    ) -> Result<(), LivePartError> {
        for attempt in 0..2 {
            let Some(v) = self.live_viewer_mut() else {
                return Err(LivePartError::NotAViewer);
            };
            let taken = if sign_all {
                let chunk = m.bin.base_offset();
                let data = span.first().copied().unwrap_or_default();
                v.verify_signed_chunk(chunk, data, m.timestamp, &m.signature, within)
                    .map(|_| true)
            } else {
                v.add_munro(m, within)
            };
            match taken {
                Ok(new) => {
                    if !sign_all {
                        let v = self.live_viewer_mut().ok_or(LivePartError::NotAViewer)?;
                        v.verify_munro_chunks(m.bin, span)
                            .map_err(LivePartError::Mismatch)?;
                    }
                    if new {
                        self.stats.munros_accepted += 1;
                        self.munro_accepted(m.clone());
                        self.discard_behind_window();
                    }
                    return Ok(());
                }
                Err(LiveError::NewSession(_)) if attempt == 0 => {
                    self.restart_live_viewer(None, m.timestamp);
                }
                // Under Sign All the signature covers the chunk's bytes.
                Err(e @ LiveError::BadSignature(_)) if sign_all => {
                    return Err(LivePartError::Mismatch(e));
                }
                Err(e @ (LiveError::Mismatch(_) | LiveError::WrongLength(_))) => {
                    return Err(LivePartError::Mismatch(e));
                }
                Err(e) => return Err(LivePartError::Munro(e)),
            }
        }
        Err(LivePartError::NotAViewer)
    }
}
