//! `ppspp hls prepare MASTER.m3u8` and `ppspp dash prepare MANIFEST.mpd`: hash every
//! rendition of a presentation, write each one's tree file (beside its playlist, or beside
//! the MPD) and the manifest beside the master playlist or MPD, and say what to upload.

use super::error::{ManifestError, PrepareError};
use super::manifest::{self, FORMAT, Manifest, Part, Rendition, VERSION};
use super::source::SourceRendition;
use crate::live::error::ChunkSizeTooLarge;
use crate::root::{parse_chunk_size, write_tree_file};
use clap::Args;
use ppspp::merkle::{HashAlgorithm, MerkleTree};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// A presentation's chunks: bigger than the RFC's 1 KiB, since a page asks for a segment
/// of hundreds of KB at once, and small enough for one WebRTC message.
pub const PRESENTATION_CHUNK_SIZE: usize = 8192;

#[derive(Args, Debug)]
pub struct PrepareArgs {
    /// The master playlist (or a lone media playlist), or the MPD.
    source: PathBuf,
    /// Merkle hash function: sha1, sha224, sha256, sha384 or sha512.
    #[arg(long = "hash", default_value = "sha256")]
    hash: HashAlgorithm,
    /// Chunk size in bytes (1 to 1 MiB).
    #[arg(long = "chunk-size", default_value_t = PRESENTATION_CHUNK_SIZE, value_parser = parse_chunk_size)]
    chunk_size: usize,
}

/// How a presentation was packaged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Packaging {
    Hls,
    Dash,
}

/// Where a rendition's tree file goes: beside its media playlist, `NAME.ppspp-tree`; for
/// DASH, beside the MPD, `MPD-ID.ppspp-tree` (the Representation's id, made file-safe).
fn tree_path(
    packaging: Packaging,
    source: &Path,
    rendition: &SourceRendition,
) -> Result<PathBuf, ManifestError> {
    let dir = source.parent().unwrap_or(Path::new("."));
    let stem = |p: &Path| {
        p.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "rendition".into())
    };
    match packaging {
        Packaging::Hls => {
            let playlist = manifest::local_path(dir, &rendition.id)?;
            Ok(playlist.with_file_name(format!("{}.ppspp-tree", stem(&playlist))))
        }
        Packaging::Dash => {
            let id: String = rendition
                .id
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
            Ok(source.with_file_name(format!("{}-{id}.ppspp-tree", stem(source))))
        }
    }
}

pub fn run(args: &PrepareArgs, packaging: Packaging) -> Result<(), PrepareError> {
    let renditions = match packaging {
        Packaging::Hls => super::hls::renditions(&args.source)?,
        Packaging::Dash => super::dash::renditions(&args.source)?,
    };
    let out = manifest::path_for(&args.source);
    let manifest = prepare(
        &args.source,
        &renditions,
        packaging,
        args.hash,
        args.chunk_size,
    )?;
    manifest.write(&out)?;
    report(&args.source, &out, &manifest, &renditions)
}

/// Hashes each rendition and writes its tree file; the manifest of them all.
pub fn prepare(
    source: &Path,
    renditions: &[SourceRendition],
    packaging: Packaging,
    hash: HashAlgorithm,
    chunk_size: usize,
) -> Result<Manifest, PrepareError> {
    let dir = source.parent().unwrap_or(Path::new("."));
    let mut out = Vec::with_capacity(renditions.len());
    let mut trees = std::collections::HashSet::new();
    for r in renditions {
        let tree_file = tree_path(packaging, source, r)?;
        if !trees.insert(tree_file.clone()) {
            return Err(PrepareError::SharedTreeFile(tree_file));
        }
        let tree = hash_rendition(r, hash, chunk_size)?;
        write_tree_file(&tree, &tree_file)?;
        out.push(Rendition {
            id: r.id.clone(),
            kind: r.kind.clone(),
            bandwidth: r.bandwidth,
            resolution: r.resolution.clone(),
            root: tree.root().to_hex(),
            hash: hash.to_string(),
            chunk_size: u32::try_from(chunk_size).map_err(|_| ChunkSizeTooLarge)?,
            length: tree.content_len(),
            tree: manifest::relative_uri(dir, &tree_file)?,
            parts: r
                .parts
                .iter()
                .map(|p| Part {
                    uri: p.uri.clone(),
                    offset: p.offset,
                    length: p.length,
                })
                .collect(),
        });
    }
    Ok(Manifest {
        format: FORMAT.into(),
        version: VERSION,
        kind: "vod".into(),
        source: manifest::relative_uri(dir, &dir.join(source.file_name().unwrap_or_default()))?,
        renditions: out,
    })
}

/// The Merkle tree of a rendition's parts, read in order in 64 KiB pieces.
pub fn hash_rendition(
    r: &SourceRendition,
    hash: HashAlgorithm,
    chunk_size: usize,
) -> Result<MerkleTree, PrepareError> {
    let progress = crate::progress::hashing_bar(r.length());
    let mut builder = MerkleTree::builder(hash, chunk_size);
    let mut buf = vec![0u8; 1 << 16];
    for p in &r.parts {
        let mut file = std::fs::File::open(&p.path).map_err(|source| PrepareError::Open {
            path: p.path.clone(),
            source,
        })?;
        file.seek(SeekFrom::Start(p.offset.unwrap_or(0)))
            .map_err(|source| PrepareError::Read {
                path: p.path.clone(),
                source,
            })?;
        let mut left = p.length;
        while left > 0 {
            let want = buf.len().min(left as usize);
            file.read_exact(&mut buf[..want])
                .map_err(|source| PrepareError::ReadPart {
                    path: p.path.clone(),
                    left,
                    source,
                })?;
            builder.push(&buf[..want]);
            progress.inc(want as u64);
            left -= want as u64;
        }
    }
    progress.finish_and_clear();
    builder.finish().map_err(|source| PrepareError::Hash {
        id: r.id.clone(),
        source,
    })
}

fn report(
    source: &Path,
    out: &Path,
    manifest: &Manifest,
    renditions: &[SourceRendition],
) -> Result<(), PrepareError> {
    for (m, r) in manifest.renditions.iter().zip(renditions) {
        crate::print_line(format_args!(
            "{} {} {}: {} bytes in {} parts, {:.1} s{}",
            m.root,
            m.kind,
            m.id,
            m.length,
            m.parts.len(),
            r.duration_secs,
            m.resolution
                .as_deref()
                .map(|x| format!(", {x}"))
                .unwrap_or_default()
        ))?;
    }
    let dir = source.parent().unwrap_or(Path::new("."));
    eprintln!(
        "wrote {} and {} tree files; upload them beside {} (the media files are unchanged)",
        out.display(),
        manifest.renditions.len(),
        source.display()
    );
    eprintln!(
        "seed every rendition with: ppspp seed {} --signal ws://HOST:PORT/ws",
        out.strip_prefix(dir)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| out.display().to_string())
    );
    Ok(())
}
