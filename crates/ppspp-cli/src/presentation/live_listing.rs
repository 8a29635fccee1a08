//! What a live packager lists of a rendition now: an HLS media playlist (ffmpeg's `hls`
//! muxer) or a Representation of a dynamic MPD (ffmpeg's `dash` muxer, SegmentTemplate
//! with a SegmentTimeline), as the segments `presentation::live` follows, each with its
//! sequence number, file and initialisation section.

use super::error::LivePresentationError;
use super::{dash, hls, manifest::local_path};
use std::path::{Path, PathBuf};

/// A segment the packager lists.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedSegment {
    /// Its media sequence number (HLS) or `$Number$` (DASH): it grows by one a segment,
    /// and starts again when the packager does.
    pub sequence: u64,
    pub path: PathBuf,
    /// The initialisation section it needs, if any (a file of its own).
    pub init: Option<PathBuf>,
}

/// What the packager lists of a rendition now.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    pub segments: Vec<ListedSegment>,
    /// Nothing more comes (`#EXT-X-ENDLIST`; an MPD turned static).
    pub ended: bool,
}

/// Where a rendition's segments are listed.
#[derive(Debug, Clone)]
pub enum Listing {
    /// An HLS media playlist.
    Hls(PathBuf),
    /// The Representation `id` of an MPD.
    Dash { mpd: PathBuf, id: String },
}

impl Listing {
    /// What is listed now; `Ok(None)` when the list cannot be read at the moment (being
    /// rewritten), an error for a form that cannot be followed.
    pub fn read(&self) -> Result<Option<Listed>, LivePresentationError> {
        match self {
            Listing::Hls(playlist) => read_hls(playlist),
            Listing::Dash { mpd, id } => {
                let Some(live) = dash::read_live(mpd)? else {
                    return Ok(None);
                };
                let rep = live
                    .representations
                    .into_iter()
                    .find(|r| r.variant.uri == *id)
                    .ok_or_else(|| LivePresentationError::RepresentationGone(id.clone()))?;
                let init = rep.init;
                Ok(Some(Listed {
                    segments: rep
                        .segments
                        .into_iter()
                        .map(|(sequence, path)| ListedSegment {
                            sequence,
                            path,
                            init: init.clone(),
                        })
                        .collect(),
                    ended: live.ended,
                }))
            }
        }
    }
}

fn read_hls(playlist: &Path) -> Result<Option<Listed>, LivePresentationError> {
    // A playlist being rewritten (a packager without temp files) is read next time.
    let Ok(media) = hls::read_media(playlist) else {
        return Ok(None);
    };
    let dir = playlist.parent().unwrap_or(Path::new("."));
    let mut init = None;
    let mut segments = Vec::with_capacity(media.segments.len());
    for (i, seg) in media.segments.iter().enumerate() {
        if let Some(m) = &seg.map {
            if m.byte_range.is_some() {
                return Err(LivePresentationError::MapByteRange);
            }
            init = Some(local_path(dir, &m.uri)?);
        }
        if seg.byte_range.is_some() {
            return Err(LivePresentationError::ByteRangeSegments);
        }
        segments.push(ListedSegment {
            sequence: media.media_sequence + i as u64,
            path: local_path(dir, &seg.uri)?,
            init: init.clone(),
        });
    }
    Ok(Some(Listed {
        segments,
        ended: media.end_list,
    }))
}
