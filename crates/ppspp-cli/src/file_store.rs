//! Chunks in a file: the seeder reads its content file; the fetcher writes a temporary
//! `NAME.part` next to the output and renames it only once every chunk is verified, so an
//! interrupted or failed fetch never leaves a file that looks complete.

use ppspp::store::{ChunkStore, StoreError, checked_span, chunk_span};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

#[derive(Debug)]
pub struct FileStore {
    file: File,
    len: u64,
    chunk_size: usize,
    /// Which chunks the file holds (all of them for a seeder).
    held: Vec<bool>,
    /// For a fetch: the temporary path and the final one, until committed.
    paths: Option<(PathBuf, PathBuf)>,
    committed: Option<PathBuf>,
}

impl FileStore {
    /// Serves `path` as complete content.
    pub fn open_complete(path: &Path, chunk_size: usize) -> std::io::Result<FileStore> {
        let file = File::open(path)?;
        let len = file.metadata()?.len();
        let chunks = ppspp::store::chunk_count(len, chunk_size) as usize;
        Ok(FileStore {
            file,
            len,
            chunk_size,
            held: vec![true; chunks],
            paths: None,
            committed: None,
        })
    }

    /// Prepares `output.part` for content of `len` bytes.
    pub fn create_partial(
        output: &Path,
        len: u64,
        chunk_size: usize,
    ) -> std::io::Result<FileStore> {
        let mut part = output.as_os_str().to_owned();
        part.push(".part");
        let part = PathBuf::from(part);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&part)?;
        file.set_len(len)?;
        let chunks = ppspp::store::chunk_count(len, chunk_size) as usize;
        Ok(FileStore {
            file,
            len,
            chunk_size,
            held: vec![false; chunks],
            paths: Some((part, output.to_path_buf())),
            committed: None,
        })
    }

    /// Flushes the verified content to disk and moves it to its final name; the store
    /// keeps serving from the renamed file. Returns the final path.
    pub fn commit(&mut self) -> std::io::Result<PathBuf> {
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

    /// Removes the temporary file of an unfinished fetch.
    pub fn abandon(self) {
        if let Some((part, _)) = &self.paths {
            let _ = std::fs::remove_file(part);
        }
    }

    fn span(&self, chunk: u64) -> Result<std::ops::Range<u64>, StoreError> {
        chunk_span(self.len, self.chunk_size, chunk).ok_or(StoreError::OutOfRange {
            chunk,
            chunks: self.held.len() as u64,
        })
    }
}

fn backend(e: std::io::Error) -> StoreError {
    StoreError::Backend(e.to_string())
}

impl ChunkStore for FileStore {
    fn write_chunk(&mut self, chunk: u64, data: &[u8]) -> Result<(), StoreError> {
        let span = checked_span(self.len, self.chunk_size, chunk, data.len())?;
        self.file
            .seek(SeekFrom::Start(span.start))
            .map_err(backend)?;
        self.file.write_all(data).map_err(backend)?;
        self.held[chunk as usize] = true;
        Ok(())
    }

    fn read_chunk(&mut self, chunk: u64, out: &mut Vec<u8>) -> Result<bool, StoreError> {
        let span = self.span(chunk)?;
        if !self.held[chunk as usize] {
            return Ok(false);
        }
        let start = out.len();
        out.resize(start + (span.end - span.start) as usize, 0);
        self.file
            .seek(SeekFrom::Start(span.start))
            .map_err(backend)?;
        self.file.read_exact(&mut out[start..]).map_err(backend)?;
        Ok(true)
    }
}
