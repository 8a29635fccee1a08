//! A rendition as read from a packager's output: its parts as local files or byte ranges of
//! them, in content order.

use super::error::PartError;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// A rendition as a packager lists it, and what it carries.
#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    /// Its id: the media playlist's URI relative to the master (HLS), or the
    /// Representation's id (DASH).
    pub uri: String,
    pub kind: &'static str,
    pub bandwidth: Option<u64>,
    pub resolution: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SourceRendition {
    /// The media playlist's URI relative to the master (HLS) or the Representation's id.
    pub id: String,
    pub kind: String,
    pub bandwidth: Option<u64>,
    pub resolution: Option<String>,
    /// The segments' durations summed.
    pub duration_secs: f64,
    pub parts: Vec<SourcePart>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SourcePart {
    /// Relative to the manifest's folder, as it goes into the manifest.
    pub uri: String,
    /// The file on disk.
    pub path: PathBuf,
    /// Where in the file the part starts (`None`: the whole file).
    pub offset: Option<u64>,
    pub length: u64,
}

impl SourceRendition {
    /// The content's length: its parts' lengths summed.
    pub fn length(&self) -> u64 {
        self.parts.iter().map(|p| p.length).sum()
    }
}

/// What a CODECS list (RFC 6381, as HLS and DASH write it) names: (video, audio).
pub fn codec_kinds(codecs: &str) -> (bool, bool) {
    let is = |prefixes: &[&str]| {
        codecs
            .split(',')
            .any(|c| prefixes.iter().any(|p| c.trim().starts_with(p)))
    };
    let video = is(&[
        "avc1", "avc3", "hvc1", "hev1", "vp09", "vp8", "av01", "dvh1", "dvhe",
    ]);
    let audio = is(&["mp4a", "opus", "ac-3", "ec-3", "flac", "vorbis", "mp3"]);
    (video, audio)
}

/// Resolves a presentation's parts to files under the manifest's folder, checking that
/// each exists and that byte ranges lie within their file.
pub struct PartFiles<'a> {
    master_dir: &'a Path,
    /// Where the next range without an offset starts, per URI (HLS, RFC 8216 §4.3.2.2).
    next_offset: HashMap<String, u64>,
    sizes: HashMap<PathBuf, u64>,
}

impl<'a> PartFiles<'a> {
    /// Parts whose URIs go into a manifest in `master_dir`.
    pub fn new(master_dir: &'a Path) -> PartFiles<'a> {
        PartFiles {
            master_dir,
            next_offset: HashMap::new(),
            sizes: HashMap::new(),
        }
    }

    /// The part `uri` (relative to `base_dir`, the folder of the playlist or MPD naming
    /// it): the whole file, or `range` (length, offset; no offset: after the previous
    /// range of the same URI). Its URI is made relative to the manifest's folder.
    pub fn part(
        &mut self,
        base_dir: &Path,
        uri: &str,
        range: Option<(u64, Option<u64>)>,
    ) -> Result<SourcePart, PartError> {
        let path = super::manifest::local_path(base_dir, uri)?;
        let size = match self.sizes.get(&path) {
            Some(s) => *s,
            None => {
                let meta = std::fs::metadata(&path).map_err(|source| PartError::Open {
                    uri: uri.to_string(),
                    path: path.clone(),
                    source,
                })?;
                if !meta.is_file() {
                    return Err(PartError::NotAFile {
                        uri: uri.to_string(),
                        path,
                    });
                }
                self.sizes.insert(path.clone(), meta.len());
                meta.len()
            }
        };
        let (offset, length) = match range {
            None => (None, size),
            Some((length, offset)) => {
                let offset =
                    offset.unwrap_or_else(|| self.next_offset.get(uri).copied().unwrap_or(0));
                if offset.checked_add(length).is_none_or(|end| end > size) {
                    return Err(PartError::RangePastEnd {
                        uri: uri.to_string(),
                        length,
                        offset,
                        size,
                    });
                }
                self.next_offset.insert(uri.to_string(), offset + length);
                (Some(offset), length)
            }
        };
        if length == 0 {
            return Err(PartError::Empty {
                uri: uri.to_string(),
            });
        }
        Ok(SourcePart {
            uri: super::manifest::relative_uri(self.master_dir, &path)?,
            path,
            offset,
            length,
        })
    }
}
