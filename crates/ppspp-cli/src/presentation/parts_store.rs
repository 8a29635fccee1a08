//! A rendition's content served from its parts on disk (a file per segment, or byte ranges
//! of one file): the seeder's store for a presentation. Like `FileStore` for one file, it
//! looks at each file's length and modification time again now and then, and refuses to
//! serve once one changed since it was hashed.

use super::error::PartsStoreError;
use super::source::SourcePart;
use ppspp::parts::PartMap;
use ppspp::store::{ChunkStore, StoreError, chunk_span};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::time::{Instant, SystemTime};

/// How often the files' metadata is looked at again.
const WATCH_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

#[derive(Debug)]
pub struct PartsStore {
    map: PartMap,
    /// For each part: which open file, and where in it the part starts.
    parts: Vec<(usize, u64)>,
    files: Vec<WatchedFile>,
    chunk_size: usize,
    checked: Instant,
    changed: Option<String>,
}

#[derive(Debug)]
struct WatchedFile {
    path: PathBuf,
    file: File,
    len: u64,
    modified: Option<SystemTime>,
}

impl PartsStore {
    /// Opens every file the parts name (each once), as complete content.
    pub fn open(parts: &[SourcePart], chunk_size: usize) -> Result<PartsStore, PartsStoreError> {
        let map = PartMap::new(parts.iter().map(|p| p.length)).map_err(PartsStoreError::Map)?;
        let mut files: Vec<WatchedFile> = Vec::new();
        let mut placed = Vec::with_capacity(parts.len());
        for p in parts {
            let index = match files.iter().position(|f| f.path == p.path) {
                Some(i) => i,
                None => {
                    let file = File::open(&p.path).map_err(|source| PartsStoreError::Open {
                        path: p.path.clone(),
                        source,
                    })?;
                    let meta = file.metadata().map_err(|source| PartsStoreError::Read {
                        path: p.path.clone(),
                        source,
                    })?;
                    files.push(WatchedFile {
                        path: p.path.clone(),
                        file,
                        len: meta.len(),
                        modified: meta.modified().ok(),
                    });
                    files.len() - 1
                }
            };
            let start = p.offset.unwrap_or(0);
            if start + p.length > files[index].len {
                return Err(PartsStoreError::TooShort {
                    path: p.path.clone(),
                    len: files[index].len,
                    length: p.length,
                    start,
                });
            }
            placed.push((index, start));
        }
        Ok(PartsStore {
            map,
            parts: placed,
            files,
            chunk_size,
            checked: Instant::now(),
            changed: None,
        })
    }

    pub fn content_len(&self) -> u64 {
        self.map.len()
    }

    fn check_unchanged(&mut self) -> Result<(), StoreError> {
        if self.changed.is_none() && self.checked.elapsed() >= WATCH_EVERY {
            self.checked = Instant::now();
            for f in &self.files {
                let why = match f.file.metadata() {
                    Ok(m) if m.len() != f.len || m.modified().ok() != f.modified => {
                        Some(format!("{} changed while seeded", f.path.display()))
                    }
                    Ok(_) => None,
                    Err(e) => Some(format!("{} cannot be read: {e}", f.path.display())),
                };
                if why.is_some() {
                    self.changed = why;
                    break;
                }
            }
        }
        match &self.changed {
            Some(why) => Err(StoreError::Backend(why.clone())),
            None => Ok(()),
        }
    }
}

impl ChunkStore for PartsStore {
    fn write_chunk(&mut self, chunk: u64, _data: &[u8]) -> Result<(), StoreError> {
        // A seeder holds everything already; nothing is ever written.
        Err(StoreError::Backend(format!(
            "chunk {chunk}: a presentation's seeder does not store chunks"
        )))
    }

    fn read_chunk(&mut self, chunk: u64, out: &mut Vec<u8>) -> Result<bool, StoreError> {
        let len = self.map.len();
        let span = chunk_span(len, self.chunk_size, chunk).ok_or(StoreError::OutOfRange {
            chunk,
            chunks: ppspp::store::chunk_count(len, self.chunk_size),
        })?;
        self.check_unchanged()?;
        let start = out.len();
        for slice in self.map.locate(span) {
            let (file, at) = self.parts[slice.part];
            let f = &mut self.files[file];
            let from = out.len();
            out.resize(from + (slice.within.end - slice.within.start) as usize, 0);
            let read = f
                .file
                .seek(SeekFrom::Start(at + slice.within.start))
                .and_then(|_| f.file.read_exact(&mut out[from..]));
            if let Err(e) = read {
                out.truncate(start);
                self.changed = Some(format!("{} cannot be read: {e}", f.path.display()));
                return self.check_unchanged().map(|()| false);
            }
        }
        Ok(true)
    }
}
