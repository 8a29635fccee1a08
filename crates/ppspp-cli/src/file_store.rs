//! Chunks in a file: the seeder reads its content file; the fetcher writes a temporary
//! `NAME.<random>.part` next to the output and renames it only once every chunk is
//! verified, so an interrupted or failed fetch never leaves a file that looks complete.
//!
//! The temporary file is created new (`O_CREAT|O_EXCL`, which follows no symlink) under a
//! random name, so nothing planted at a predictable path is ever written through, and its
//! space is reserved before the download, so a full disk is found before any peer is.

use crate::file_blocks::{Geometry, ReadBlocks, WriteBlocks};
use ppspp::Bin;
use ppspp::binmap::Binmap;
use ppspp::store::{ChunkStore, StoreError, checked_span, chunk_span};
use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

#[derive(Debug)]
pub struct FileStore {
    file: File,
    len: u64,
    chunk_size: usize,
    /// Which chunks the file holds (all of them for a seeder): a binmap, so its size does
    /// not grow with the content's.
    held: Binmap,
    chunks: u64,
    /// For a fetch: the temporary path and the final one, until committed.
    paths: Option<(PathBuf, PathBuf)>,
    committed: Option<PathBuf>,
    /// For a seeder: the file as it was hashed, looked at again now and then.
    watched: Option<Watched>,
    /// Chunks are read and written a block at a time.
    reads: ReadBlocks,
    writes: WriteBlocks,
    /// Blocks just written (their read copies are stale); kept to reuse its allocation.
    written: Vec<u64>,
}

/// A seeded file's length and modification time when it was opened: a file that shrinks
/// or is rewritten would be served past its end or with bytes its hashes do not match.
#[derive(Debug)]
struct Watched {
    len: u64,
    modified: Option<std::time::SystemTime>,
    checked: std::time::Instant,
    /// Set once a change is seen: every read fails from then on.
    changed: Option<String>,
}

/// How often a seeded file's metadata is looked at again (a `fstat` per this, not per
/// chunk served).
const WATCH_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

impl FileStore {
    /// Serves `path` as complete content.
    pub fn open_complete(path: &Path, chunk_size: usize) -> io::Result<FileStore> {
        let file = File::open(path)?;
        let meta = file.metadata()?;
        let len = meta.len();
        let chunks = ppspp::store::chunk_count(len, chunk_size);
        let mut held = Binmap::new();
        for b in Bin::from_chunk_range(0, chunks.saturating_sub(1)) {
            held.set(b);
        }
        let geometry = Geometry::new(len, chunk_size);
        Ok(FileStore {
            file,
            len,
            chunk_size,
            held,
            chunks,
            paths: None,
            committed: None,
            reads: ReadBlocks::new(geometry),
            writes: WriteBlocks::new(geometry),
            written: Vec::new(),
            watched: Some(Watched {
                len,
                modified: meta.modified().ok(),
                checked: std::time::Instant::now(),
                changed: None,
            }),
        })
    }

    /// The content's length in bytes.
    pub fn content_len(&self) -> u64 {
        self.len
    }

    /// A seeded file that changed since it was opened: why, or `None`.
    fn check_unchanged(&mut self) -> Result<(), StoreError> {
        let Some(w) = self.watched.as_mut() else {
            return Ok(());
        };
        if w.changed.is_none() && w.checked.elapsed() >= WATCH_EVERY {
            w.checked = std::time::Instant::now();
            match self.file.metadata() {
                Ok(m) if m.len() != w.len => {
                    w.changed = Some(format!(
                        "the file changed while seeded: it is now {} bytes, it was {} when hashed",
                        m.len(),
                        w.len
                    ));
                }
                Ok(m) if m.modified().ok() != w.modified => {
                    w.changed = Some(
                        "the file changed while seeded: it was written to since it was hashed"
                            .into(),
                    );
                }
                Ok(_) => {}
                Err(e) => w.changed = Some(format!("the seeded file cannot be read: {e}")),
            }
        }
        match &w.changed {
            Some(why) => Err(StoreError::Backend(why.clone())),
            None => Ok(()),
        }
    }

    /// Prepares a temporary file beside `output` for content of `len` bytes, with its space
    /// reserved. Fails, leaving nothing behind, if `output` is a directory, its directory
    /// does not exist, or the disk lacks the space.
    pub fn create_partial(output: &Path, len: u64, chunk_size: usize) -> io::Result<FileStore> {
        let dir = check_output(output)?;
        if i64::try_from(len).is_err() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("content of {len} bytes is larger than any file can be"),
            ));
        }
        let free = free_space(&dir)?;
        if free < len {
            return Err(io::Error::new(
                io::ErrorKind::StorageFull,
                format!(
                    "the content needs {len} bytes but only {free} are free in {}",
                    dir.display()
                ),
            ));
        }
        let (part, file) = create_temporary(output)?;
        if let Err(e) = reserve(&file, len) {
            drop(file);
            let _ = std::fs::remove_file(&part);
            return Err(e);
        }
        Ok(FileStore {
            file,
            len,
            chunk_size,
            held: Binmap::new(),
            chunks: ppspp::store::chunk_count(len, chunk_size),
            paths: Some((part, output.to_path_buf())),
            committed: None,
            watched: None,
            reads: ReadBlocks::new(Geometry::new(len, chunk_size)),
            writes: WriteBlocks::new(Geometry::new(len, chunk_size)),
            written: Vec::new(),
        })
    }

    /// The temporary file of an unfinished fetch, if any.
    pub fn temporary_path(&self) -> Option<&Path> {
        self.paths.as_ref().map(|(part, _)| part.as_path())
    }

    /// Flushes the verified content to disk and moves it to its final name; the store
    /// keeps serving from the renamed file. Returns the final path.
    pub fn commit(&mut self) -> std::io::Result<PathBuf> {
        self.written.clear();
        self.writes.flush(&self.file, &mut self.written)?;
        self.reads.forget(&self.written);
        self.file.sync_all()?;
        match self.paths.take() {
            Some((part, output)) => {
                std::fs::rename(&part, &output)?;
                self.committed = Some(output.clone());
                Ok(output)
            }
            None => Ok(self.committed.clone().unwrap_or_default()),
        }
    }

    /// Removes the temporary file of an unfinished fetch (as dropping the store does).
    pub fn abandon(self) {
        drop(self);
    }

    fn span(&self, chunk: u64) -> Result<std::ops::Range<u64>, StoreError> {
        chunk_span(self.len, self.chunk_size, chunk).ok_or(StoreError::OutOfRange {
            chunk,
            chunks: self.chunks,
        })
    }
}

fn backend(e: io::Error) -> StoreError {
    StoreError::Backend(e.to_string())
}

/// Checks that `output` can become a file, before anything is fetched; returns its
/// directory.
pub(crate) fn check_output(output: &Path) -> io::Result<PathBuf> {
    if output.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            format!("{} is a directory; name a file to write", output.display()),
        ));
    }
    if output.file_name().is_none() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} does not name a file", output.display()),
        ));
    }
    let dir = match output.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !dir.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("directory {} does not exist", dir.display()),
        ));
    }
    Ok(dir)
}

/// Bytes an unprivileged writer may still use in `dir`'s file system.
fn free_space(dir: &Path) -> io::Result<u64> {
    let st = rustix::fs::statvfs(dir)?;
    Ok(st.f_bavail.saturating_mul(st.f_frsize))
}

/// Creates `NAME.<random>.part` beside `output`, new: an existing path (a symlink planted
/// there included) makes it try another name, never write through it.
pub(crate) fn create_temporary(output: &Path) -> io::Result<(PathBuf, File)> {
    let mut last = None;
    for _ in 0..16 {
        let mut name = output.as_os_str().to_owned();
        name.push(format!(".{:016x}.part", crate::random_seed()));
        let part = PathBuf::from(name);
        match OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&part)
        {
            Ok(file) => return Ok((part, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no free temporary name")))
}

/// Reserves `len` bytes for the file, so a full disk shows now rather than mid-download;
/// where the file system cannot reserve, the file is only sized (sparse).
fn reserve(file: &File, len: u64) -> io::Result<()> {
    if len == 0 {
        return Ok(());
    }
    match rustix::fs::fallocate(file, rustix::fs::FallocateFlags::empty(), 0, len) {
        Ok(()) => Ok(()),
        Err(e) if e == rustix::io::Errno::OPNOTSUPP || e == rustix::io::Errno::NOSYS => {
            file.set_len(len)
        }
        Err(e) => Err(e.into()),
    }
}

impl ChunkStore for FileStore {
    fn write_chunk(&mut self, chunk: u64, data: &[u8]) -> Result<(), StoreError> {
        let span = checked_span(self.len, self.chunk_size, chunk, data.len())?;
        self.written.clear();
        let wrote = self
            .writes
            .write(&self.file, chunk, span, data, &mut self.written);
        self.reads.forget(&self.written);
        wrote.map_err(backend)?;
        self.held.set_chunk(chunk);
        Ok(())
    }

    fn read_chunk(&mut self, chunk: u64, out: &mut Vec<u8>) -> Result<bool, StoreError> {
        let span = self.span(chunk)?;
        if !self.held.has_chunk(chunk) {
            return Ok(false);
        }
        self.check_unchanged()?;
        if self.writes.read(chunk, span.clone(), out) {
            return Ok(true);
        }
        if let Err(e) = self.reads.read(&self.file, chunk, span.clone(), out) {
            if e.kind() == io::ErrorKind::UnexpectedEof
                && let Some(w) = self.watched.as_mut()
            {
                // Shorter than when it was hashed: say so now, not at the next look.
                w.changed = Some(format!(
                    "the file changed while seeded: it is shorter than the {} bytes hashed",
                    w.len
                ));
                return self.check_unchanged().map(|()| false);
            }
            return Err(backend(e));
        }
        Ok(true)
    }
}

/// An unfinished fetch leaves nothing behind, whichever way it ends: a fetch that could
/// not start (an engine that refused the content) once left its `fallocate`d `.part`.
impl Drop for FileStore {
    fn drop(&mut self) {
        if let Some((part, _)) = self.paths.take() {
            let _ = std::fs::remove_file(part);
        }
    }
}
