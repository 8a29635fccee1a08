//! A rendition as read from a packager's output: its parts as local files or byte ranges of
//! them, in content order.

use std::path::PathBuf;

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
