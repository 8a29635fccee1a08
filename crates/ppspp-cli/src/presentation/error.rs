//! What can go wrong with HLS and DASH presentations: reading a packager's playlists or
//! MPD, the manifest and its paths, hashing (`prepare`), serving (`seed`) and following a
//! live one (`live`). Callers can tell a bad playlist from a failed write without reading
//! messages. Each variant's text is the one users have always seen.

use crate::StdoutError;
use crate::live::error::{ChunkSizeTooLarge, KeyFileError};
use crate::metrics::MetricsError;
use crate::root::RootError;
use crate::seed::ServeContentError;
use crate::serve::ServeError;
use ppspp::engine::EngineError;
use ppspp::live::text_fields::TextFieldError;
use ppspp::merkle::{MerkleError, ParseHashAlgorithmError};
use ppspp::parts::PartMapError;
use ppspp::store::StoreError;
use ppspp::uri::UriError;
use std::io;
use std::path::PathBuf;

/// A presentation manifest (`NAME.ppspp.json`) that cannot be read or written, or a
/// URI or path that cannot be one of its entries.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("cannot read {}: {source}", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{} is not a presentation manifest: {source}", .path.display())]
    NotAManifest {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("{}: format is '{format}', not '{}'", .path.display(), super::manifest::FORMAT)]
    WrongFormat { path: PathBuf, format: String },
    #[error("{}: version {version} (this ppspp reads version {}); prepare it again", .path.display(), super::manifest::VERSION)]
    WrongVersion { path: PathBuf, version: u32 },
    /// A live manifest is the live source's to rewrite, not one to seed from.
    #[error("{}: type '{kind}': only on-demand (vod) presentations are seeded from a manifest", .path.display())]
    NotOnDemand { path: PathBuf, kind: String },
    #[error("{}: rendition {id}: its parts do not add up to its length {length}", .path.display())]
    PartsMismatch {
        path: PathBuf,
        id: String,
        length: u64,
    },
    /// serde_json would not encode the manifest.
    #[error("{0}")]
    Encode(#[source] serde_json::Error),
    #[error("cannot write {}: {source}", .path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// A seeder serves only what sits beside its manifest.
    #[error(
        "'{0}' is not a path relative to the manifest: prepare reads and seeds local files only"
    )]
    NotRelative(String),
    #[error("'{0}' has a bad %-escape")]
    BadEscape(String),
    #[error("'{0}' leaves the manifest's folder")]
    LeavesFolder(String),
    #[error("{} is not inside {}: keep the presentation's files under its master playlist's folder", .path.display(), .dir.display())]
    NotInside { path: PathBuf, dir: PathBuf },
}

/// A part of a presentation (a segment, or a byte range of a file) that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PartError {
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    #[error("{uri}: cannot open {}: {source}", .path.display())]
    Open {
        uri: String,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{uri}: {} is not a regular file", .path.display())]
    NotAFile { uri: String, path: PathBuf },
    #[error("{uri}: the byte range {length}@{offset} runs past the file's end ({size} bytes)")]
    RangePastEnd {
        uri: String,
        length: u64,
        offset: u64,
        size: u64,
    },
    #[error("{uri}: an empty segment")]
    Empty { uri: String },
}

/// An HLS playlist that cannot be read as a presentation.
#[derive(Debug, thiserror::Error)]
pub enum HlsError {
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    #[error(transparent)]
    Part(#[from] PartError),
    #[error("cannot read {}: {source}", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{} is not an HLS playlist (no #EXTM3U)", .0.display())]
    NotHls(PathBuf),
    /// m3u8-rs's error borrows the file's bytes: `detail` is what it said.
    #[error("{} is not a playlist m3u8-rs can read: {detail}", .path.display())]
    Unreadable { path: PathBuf, detail: String },
    #[error("{}: the master playlist names no media playlist", .0.display())]
    NoMediaPlaylist(PathBuf),
    #[error("{} is a master playlist where a media playlist was expected", .0.display())]
    NotMedia(PathBuf),
    #[error("{} names no file", .0.display())]
    NoFileName(PathBuf),
    #[error("{0} is a live playlist (no #EXT-X-ENDLIST): prepare takes on-demand presentations")]
    Live(String),
    #[error("{0} has no segments")]
    NoSegments(String),
}

/// A DASH MPD, or one of its Representations, that cannot be read as a presentation.
#[derive(Debug, thiserror::Error)]
pub enum DashError {
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    #[error(transparent)]
    Part(#[from] PartError),
    #[error("cannot read {}: {source}", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{} is not an MPD dash-mpd-core can read: {source}", .path.display())]
    NotAnMpd {
        path: PathBuf,
        #[source]
        source: dash_mpd_core::DashMpdError,
    },
    #[error("{} is a live MPD (type=\"dynamic\"): prepare takes on-demand presentations", .0.display())]
    Live(PathBuf),
    #[error("{} has no Period", .0.display())]
    NoPeriod(PathBuf),
    #[error("{} has {count} Periods: prepare takes presentations of one Period", .path.display())]
    Periods { path: PathBuf, count: usize },
    #[error("{} has {count} Periods: live MPDs of one Period are followed", .path.display())]
    LivePeriods { path: PathBuf, count: usize },
    #[error("{}: a Representation has no id", .0.display())]
    NoRepresentationId(PathBuf),
    #[error("{} has no video or audio Representation", .0.display())]
    NoRepresentation(PathBuf),
    /// What is wrong with one Representation, named.
    #[error("{}, Representation {id}: {source}", .path.display())]
    Representation {
        path: PathBuf,
        id: String,
        #[source]
        source: Box<DashError>,
    },
    #[error("BaseURL '{0}' is not relative to the MPD: prepare reads local files only")]
    BaseUrlNotRelative(String),
    #[error("no media URL and no BaseURL naming a file")]
    NoMediaFile,
    #[error("its SegmentList names no segment")]
    EmptySegmentList,
    #[error("'{0}' is not a byte range (first-last)")]
    BadRange(String),
    #[error("live Representations are followed with a SegmentTemplate (ffmpeg: -use_template 1)")]
    LiveWithoutTemplate,
    #[error(
        "a live SegmentTemplate without a SegmentTimeline is not followed (ffmpeg: -use_timeline 1)"
    )]
    LiveWithoutTimeline,
    #[error("its SegmentTemplate has no media attribute")]
    NoMediaAttribute,
    #[error("its SegmentTemplate has neither a SegmentTimeline nor a duration")]
    NoTimelineNorDuration,
    #[error(
        "the MPD gives no duration (mediaPresentationDuration), so the segment count is unknown"
    )]
    NoDuration,
    #[error("its SegmentTemplate names no segment")]
    EmptyTemplate,
    #[error("a SegmentTimeline entry has a zero duration")]
    ZeroDuration,
    #[error("a repeat to the end of an MPD that gives no duration (mediaPresentationDuration)")]
    RepeatWithoutDuration,
    /// A bound on memory for a Representation's list of segments.
    #[error("over a million segments in one Representation")]
    TooManySegments,
    #[error("'{0}' has an unclosed $")]
    UnclosedIdentifier(String),
    /// `$Number$` or `$Time$` (`identifier`) in an initialisation template.
    #[error("'{template}': ${identifier}$ where it has no meaning")]
    MeaninglessIdentifier {
        template: String,
        identifier: &'static str,
    },
    #[error("'{template}': unknown identifier ${identifier}$")]
    UnknownIdentifier {
        template: String,
        identifier: String,
    },
    #[error("'{template}': format %{format} is not %0Nd")]
    BadFormat { template: String, format: String },
}

/// Why a rendition's parts cannot be opened as a seeder's store.
#[derive(Debug, thiserror::Error)]
pub enum PartsStoreError {
    /// A part of no bytes, or parts adding up to more than 2^64 bytes.
    #[error("{0}")]
    Map(PartMapError),
    #[error("cannot open {}: {source}", .path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot read {}: {source}", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{} is {len} bytes: too short for its part of {length} bytes at {start}; prepare again", .path.display())]
    TooShort {
        path: PathBuf,
        len: u64,
        length: u64,
        start: u64,
    },
}

/// Why `hls prepare` or `dash prepare` failed.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    #[error(transparent)]
    Hls(#[from] HlsError),
    #[error(transparent)]
    Dash(#[from] DashError),
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    #[error(transparent)]
    Tree(#[from] RootError),
    #[error("two renditions would share the tree file {} (rename one of them)", .0.display())]
    SharedTreeFile(PathBuf),
    #[error(transparent)]
    ChunkSize(#[from] ChunkSizeTooLarge),
    #[error("cannot open {}: {source}", .path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot read {}: {source}", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// A part's file ended (or failed) before the part did.
    #[error("cannot read {} ({left} bytes of its part left): {source}", .path.display())]
    ReadPart {
        path: PathBuf,
        left: u64,
        #[source]
        source: io::Error,
    },
    #[error("cannot hash rendition {id}: {source}")]
    Hash {
        id: String,
        #[source]
        source: MerkleError,
    },
    #[error(transparent)]
    Stdout(#[from] StdoutError),
}

/// Why seeding a prepared presentation stopped or could not start.
#[derive(Debug, thiserror::Error)]
pub enum PresentationSeedError {
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    #[error("rendition {id}: hash '{hash}': {source}")]
    BadHash {
        id: String,
        hash: String,
        #[source]
        source: ParseHashAlgorithmError,
    },
    /// Hashing a rendition's files again.
    #[error(transparent)]
    Prepare(#[from] PrepareError),
    #[error(
        "rendition {id}: its files no longer hash to the manifest's root {root}: run prepare again (and upload what it writes)"
    )]
    RootChanged { id: String, root: String },
    #[error(transparent)]
    Store(#[from] PartsStoreError),
    #[error("cannot start the runtime: {0}")]
    Runtime(#[source] io::Error),
    #[error(transparent)]
    Metrics(#[from] MetricsError),
    #[error("rendition {id}: {source}")]
    Serve {
        id: String,
        #[source]
        source: ServeContentError,
    },
    /// A rendition's files changed while it was served.
    #[error("stopped seeding rendition {id}: {source}; run ppspp hls prepare again, then seed")]
    Stopped {
        id: String,
        #[source]
        source: StoreError,
    },
    /// Every rendition that failed, in order.
    #[error("{}", join(.0))]
    Renditions(Vec<PresentationSeedError>),
}

/// A live presentation's manifest entry whose fields do not parse.
#[derive(Debug, thiserror::Error)]
pub enum LiveManifestError {
    #[error("{0}")]
    Field(#[from] TextFieldError),
    #[error("rendition {id}: swarm: {source}")]
    Swarm {
        id: String,
        #[source]
        source: UriError,
    },
}

/// Why following a live presentation stopped or could not start.
#[derive(Debug, thiserror::Error)]
pub enum LivePresentationError {
    #[error(transparent)]
    ChunkSize(#[from] ChunkSizeTooLarge),
    #[error(transparent)]
    Key(#[from] KeyFileError),
    #[error("cannot start the runtime: {0}")]
    Runtime(#[source] io::Error),
    #[error(transparent)]
    Hls(#[from] HlsError),
    #[error(transparent)]
    Dash(#[from] DashError),
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    #[error("cannot read {} as an MPD", .0.display())]
    NotAnMpd(PathBuf),
    #[error("{} has no video or audio Representation", .0.display())]
    NoRepresentation(PathBuf),
    /// The packager wrote nothing usable in time: `error` is what was wrong last.
    #[error("{error} (waited {secs} s for the packager; is it writing there?)")]
    Waited {
        #[source]
        error: Box<LivePresentationError>,
        secs: u64,
    },
    #[error("rendition {id}: cannot start: {source}")]
    Start {
        id: String,
        #[source]
        source: EngineError,
    },
    #[error(transparent)]
    Stdout(#[from] StdoutError),
    #[error("rendition {id}: {source}")]
    Listen {
        id: String,
        #[source]
        source: ServeError,
    },
    /// Following one rendition's segments failed.
    #[error("rendition {id}: {source}")]
    Rendition {
        id: String,
        #[source]
        source: Box<LivePresentationError>,
    },
    #[error("the MPD no longer has Representation {0}")]
    RepresentationGone(String),
    #[error(
        "EXT-X-MAP byte ranges are not followed live: write the initialisation section to a file of its own"
    )]
    MapByteRange,
    #[error(
        "byte-range segments are not followed live: write a file per segment (ffmpeg: without hls_flags single_file)"
    )]
    ByteRangeSegments,
    #[error("cannot read {}: {source}", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{uri}: cannot be cut into {count} chunks")]
    CannotCut { uri: String, count: u64 },
    #[error("the rendition's swarm stopped")]
    SwarmStopped,
    /// Every rendition whose serving failed, in order.
    #[error("{}", join(.0))]
    Renditions(Vec<LivePresentationError>),
}

/// Errors of several renditions, as one line.
fn join<E: std::fmt::Display>(errors: &[E]) -> String {
    let texts: Vec<String> = errors.iter().map(ToString::to_string).collect();
    texts.join("; ")
}

/// Why `ppspp hls …` or `ppspp dash …` failed.
#[derive(Debug, thiserror::Error)]
pub enum PresentationError {
    #[error(transparent)]
    Prepare(#[from] PrepareError),
    #[error(transparent)]
    Live(#[from] LivePresentationError),
}
