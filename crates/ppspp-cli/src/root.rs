//! `ppspp root FILE`: hash a file into its Merkle root, streaming so size costs no memory;
//! with `--tree OUT`, also write its hash tree for an HTTP origin (docs/FORMATS.md).

use clap::Args;
use ppspp::engine::ContentInfo;
use ppspp::merkle::tree_file::{DEFAULT_GROUP_LAYER, encode_file};
use ppspp::merkle::{HashAlgorithm, MerkleError, MerkleTree};
use ppspp::uri::{HttpOriginUrls, SwarmUri, UriError};
use std::fs::File;
use std::io::{self, ErrorKind, Read, Write};
use std::path::{Path, PathBuf};

/// The RFC's recommended chunk size.
pub const DEFAULT_CHUNK_SIZE: usize = 1024;
/// Chunks larger than this would not fit a WebRTC message or a UDP datagram.
pub const MAX_CHUNK_SIZE: usize = 1 << 20;

#[derive(Args, Debug)]
pub struct RootArgs {
    /// The file to hash.
    file: PathBuf,
    /// Merkle hash function: sha1 (the RFC default), sha224, sha256, sha384 or sha512.
    #[arg(long = "hash", default_value = "sha1")]
    hash: HashAlgorithm,
    /// Chunk size in bytes (1 to 1 MiB; the RFC recommends 1024).
    #[arg(long = "chunk-size", default_value_t = DEFAULT_CHUNK_SIZE, value_parser = parse_chunk_size)]
    chunk_size: usize,
    /// Also write the hash tree to this file (docs/FORMATS.md), to serve next to the
    /// content so pages can verify what they fetch from a web server.
    #[arg(long = "tree", value_name = "OUT")]
    tree: Option<PathBuf>,
    /// Where a web server serves the file: put into the printed swarm URI as its HTTP
    /// origin (`http=`), with the tree file (`--tree`) next to it unless `--tree-url` says.
    #[arg(long = "http", value_name = "URL", requires = "tree")]
    http: Option<String>,
    /// Where a web server serves the tree file (default: `--http`'s URL with its last path
    /// segment replaced by the tree file's name).
    #[arg(long = "tree-url", value_name = "URL", requires = "http")]
    tree_url: Option<String>,
    /// A signaling server for the printed swarm URI (`signal=`).
    #[arg(long = "signal", value_name = "URL")]
    signal: Option<String>,
}

/// A `--chunk-size` that is no chunk size.
#[derive(Debug, thiserror::Error)]
pub enum ChunkSizeError {
    #[error("'{0}' is not a whole number of bytes")]
    NotANumber(String),
    #[error("chunk size must be between 1 and {MAX_CHUNK_SIZE} bytes")]
    OutOfRange,
}

pub fn parse_chunk_size(s: &str) -> Result<usize, ChunkSizeError> {
    let n: usize = s
        .parse()
        .map_err(|_| ChunkSizeError::NotANumber(s.to_string()))?;
    if n == 0 || n > MAX_CHUNK_SIZE {
        return Err(ChunkSizeError::OutOfRange);
    }
    Ok(n)
}

/// What can go wrong hashing a file, writing its tree file or making its swarm URI.
#[derive(Debug, thiserror::Error)]
pub enum RootError {
    /// The file's metadata could not be read, or the file could not be opened.
    #[error("cannot open {}: {source}", .path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{} is a directory, not a file", .0.display())]
    Directory(PathBuf),
    /// A device, FIFO or socket: opening one may wait forever, and it has no length.
    #[error("{} is not a regular file (a device, FIFO or socket has no fixed length to hash)", .0.display())]
    NotRegular(PathBuf),
    #[error("cannot read {}: {source}", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// The Merkle tree could not be finished.
    #[error("cannot hash {}: {source}", .path.display())]
    Hash {
        path: PathBuf,
        #[source]
        source: MerkleError,
    },
    /// The tree's chunks are too large for the tree file format.
    #[error("cannot write {}: chunk size too large", .0.display())]
    TreeChunkSize(PathBuf),
    /// The tree file could not be written or renamed into place.
    #[error("cannot write {}: {source}", .path.display())]
    WriteTree {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// The chunk size does not fit a swarm URI's 32 bits.
    #[error("chunk size too large")]
    UriChunkSize,
    /// `--tree` names no file to put next to the content.
    #[error("{} is not a file name", .0.display())]
    NotAFileName(PathBuf),
    /// `--http`'s URL has no path to put the tree file next to.
    #[error("--http {0}: no path to put the tree file next to; give --tree-url")]
    NoHttpPath(String),
    /// The swarm URI made of the arguments does not parse back.
    #[error("cannot make a swarm URI of these arguments: {0}")]
    Uri(#[source] UriError),
    #[error(transparent)]
    Stdout(#[from] crate::StdoutError),
}

pub fn run(args: &RootArgs) -> Result<(), RootError> {
    let tree = hash_with_progress(&args.file, args.hash, args.chunk_size)?;
    crate::print_line(format_args!(
        "{} {} chunks ({} bytes, {} B chunks, {})",
        tree.root().to_hex(),
        tree.chunk_count(),
        tree.content_len(),
        tree.chunk_size(),
        tree.algorithm()
    ))?;
    if let Some(out) = &args.tree {
        let written = write_tree_file(&tree, out)?;
        eprintln!("wrote the hash tree to {} ({written} bytes)", out.display());
    }
    Ok(crate::print_line(swarm_uri(&tree, args)?)?)
}

/// The swarm URI of `tree`, with what the arguments name (signaling, HTTP origin, name),
/// checked by parsing it back.
fn swarm_uri(tree: &MerkleTree, args: &RootArgs) -> Result<SwarmUri, RootError> {
    let content = ContentInfo {
        root: tree.root(),
        hash: tree.algorithm(),
        chunk_size: u32::try_from(tree.chunk_size()).map_err(|_| RootError::UriChunkSize)?,
        content_len: tree.content_len(),
    };
    let mut uri = SwarmUri::new(&content);
    uri.signal = args.signal.clone();
    uri.name = args
        .file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned());
    if let (Some(http), Some(tree_file)) = (&args.http, &args.tree) {
        let tree_url = match &args.tree_url {
            Some(u) => u.clone(),
            None => sibling_url(http, tree_file)?,
        };
        uri.origin = Some(HttpOriginUrls {
            content: http.clone(),
            tree: tree_url,
        });
    }
    uri.to_string().parse::<SwarmUri>().map_err(RootError::Uri)
}

/// `url` with its last path segment replaced by `file`'s name: where the tree file sits
/// when it is served next to the content.
fn sibling_url(url: &str, file: &Path) -> Result<String, RootError> {
    let name = file
        .file_name()
        .ok_or_else(|| RootError::NotAFileName(file.to_path_buf()))?
        .to_string_lossy();
    let path_end = url.find(['?', '#']).unwrap_or(url.len());
    let slash = url[..path_end]
        .rfind('/')
        .ok_or_else(|| RootError::NoHttpPath(url.to_string()))?;
    Ok(format!("{}{name}", &url[..=slash]))
}

/// Writes `tree` as a tree file at `out`, through a temporary file renamed into place (a
/// reader never sees half a file). Returns its size.
pub fn write_tree_file(tree: &MerkleTree, out: &Path) -> Result<u64, RootError> {
    let bytes = encode_file(tree, DEFAULT_GROUP_LAYER)
        .ok_or_else(|| RootError::TreeChunkSize(out.to_path_buf()))?;
    let mut part = out.as_os_str().to_owned();
    part.push(".part");
    let part = PathBuf::from(part);
    let write = || -> std::io::Result<()> {
        let mut f = File::create(&part)?;
        f.write_all(&bytes)?;
        f.sync_all()
    };
    if let Err(e) = write().and_then(|()| std::fs::rename(&part, out)) {
        let _ = std::fs::remove_file(&part);
        return Err(RootError::WriteTree {
            path: out.to_path_buf(),
            source: e,
        });
    }
    Ok(bytes.len() as u64)
}

/// Hashes a file into its Merkle tree, reading it in 64 KiB pieces (size costs no memory
/// beyond the tree) and showing progress on stderr.
pub fn hash_with_progress(
    path: &Path,
    hash: HashAlgorithm,
    chunk_size: usize,
) -> Result<MerkleTree, RootError> {
    let open = |source| RootError::Open {
        path: path.to_path_buf(),
        source,
    };
    // Asked before opening: opening a FIFO waits for a writer, and a device such as
    // /dev/zero never ends, so neither has a length to hash or seed.
    let meta = std::fs::metadata(path).map_err(open)?;
    if meta.is_dir() {
        return Err(RootError::Directory(path.to_path_buf()));
    }
    if !meta.is_file() {
        return Err(RootError::NotRegular(path.to_path_buf()));
    }
    let mut file = File::open(path).map_err(open)?;
    let progress = crate::progress::hashing_bar(meta.len());
    let mut builder = MerkleTree::builder(hash, chunk_size);
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                builder.push(&buf[..n]);
                progress.inc(n as u64);
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(source) => {
                return Err(RootError::Read {
                    path: path.to_path_buf(),
                    source,
                });
            }
        }
    }
    progress.finish_and_clear();
    builder.finish().map_err(|source| RootError::Hash {
        path: path.to_path_buf(),
        source,
    })
}
