//! HLS and DASH presentations as PPSPP swarms: one swarm per rendition. `prepare`
//! reads a packager's output and writes the manifest (`manifest.rs`, docs/FORMATS.md) and
//! tree files; `seed` serves every rendition from the parts on disk (`parts_store.rs`).

pub mod dash;
pub mod error;
pub mod hls;
pub mod live;
pub mod live_listing;
pub mod live_manifest;
pub mod manifest;
pub mod parts_store;
pub mod prepare;
pub mod seed;
pub mod source;

use clap::Subcommand;
use error::ManifestError;
pub use error::PresentationError;

#[derive(Subcommand, Debug)]
pub enum HlsCommand {
    /// Hash every rendition of an HLS presentation (fMP4 or MPEG-TS, a file per segment or
    /// byte ranges of one file): writes MASTER.ppspp.json and a tree file per rendition.
    Prepare(prepare::PrepareArgs),
    /// Follow a live HLS presentation a packager writes into a folder (a file per
    /// segment): each rendition becomes a signed live swarm, and MASTER.ppspp.json beside
    /// the master playlist maps the playlist's segments to it, signed. With --signal or
    /// --udp the swarms are served here too; without, pages take each segment's first
    /// copy from the web server. Prints the stream key pages are given.
    Live(Box<live::LivePresentationArgs>),
}

pub fn run_hls(command: &HlsCommand) -> Result<(), PresentationError> {
    match command {
        HlsCommand::Prepare(args) => Ok(prepare::run(args, prepare::Packaging::Hls)?),
        HlsCommand::Live(args) => Ok(live::run(args, prepare::Packaging::Hls)?),
    }
}

#[derive(Subcommand, Debug)]
pub enum DashCommand {
    /// Hash every video and audio Representation of a DASH presentation (SegmentTemplate
    /// with or without a SegmentTimeline, SegmentList, or one indexed file per
    /// Representation): writes MANIFEST.ppspp.json and a tree file per Representation.
    Prepare(prepare::PrepareArgs),
    /// Follow a live DASH presentation a packager writes into a folder (one Period,
    /// SegmentTemplate with a SegmentTimeline, a file per segment: ffmpeg's `dash` muxer
    /// with -use_template 1 -use_timeline 1): each video and audio Representation becomes
    /// a signed live swarm, and MANIFEST.ppspp.json beside the MPD maps its segments to
    /// it, signed, as `hls live` does. Prints the stream key pages are given.
    Live(Box<live::LivePresentationArgs>),
}

pub fn run_dash(command: &DashCommand) -> Result<(), PresentationError> {
    match command {
        DashCommand::Prepare(args) => Ok(prepare::run(args, prepare::Packaging::Dash)?),
        DashCommand::Live(args) => Ok(live::run(args, prepare::Packaging::Dash)?),
    }
}

/// The parts of each rendition of `manifest` (read from `path`) on disk, for seeding.
pub fn source_renditions(
    path: &std::path::Path,
    manifest: &manifest::Manifest,
) -> Result<Vec<source::SourceRendition>, ManifestError> {
    let dir = path.parent().unwrap_or(std::path::Path::new("."));
    manifest
        .renditions
        .iter()
        .map(|r| {
            let parts = r
                .parts
                .iter()
                .map(|p| {
                    Ok(source::SourcePart {
                        uri: p.uri.clone(),
                        path: manifest::local_path(dir, &p.uri)?,
                        offset: p.offset,
                        length: p.length,
                    })
                })
                .collect::<Result<Vec<_>, ManifestError>>()?;
            Ok(source::SourceRendition {
                id: r.id.clone(),
                kind: r.kind.clone(),
                bandwidth: r.bandwidth,
                resolution: r.resolution.clone(),
                duration_secs: 0.0,
                parts,
            })
        })
        .collect()
}
