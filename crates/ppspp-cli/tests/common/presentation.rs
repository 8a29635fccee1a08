//! What the presentation tests share: a fixture copied where prepare may write, and a
//! rendition's bytes as its parts hold them.

use ppspp_cli::presentation::source::SourceRendition;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// A temporary folder, removed when dropped.
pub struct TempDir {
    pub path: PathBuf,
}

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        let path = std::env::temp_dir().join(format!(
            "ppspp-{name}-{}-{:x}",
            std::process::id(),
            ppspp_cli::random_seed()
        ));
        std::fs::create_dir_all(&path).unwrap();
        TempDir { path }
    }

    /// A copy of the files in `fixture` (prepare writes beside its input).
    pub fn copy_of(fixture: &Path, name: &str) -> TempDir {
        let dir = TempDir::new(name);
        for entry in std::fs::read_dir(fixture).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), dir.path.join(entry.file_name())).unwrap();
        }
        dir
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// The bytes of a rendition's parts, concatenated: what its content must be.
pub fn concatenated(r: &SourceRendition) -> Vec<u8> {
    let mut out = Vec::new();
    for p in &r.parts {
        let mut f = std::fs::File::open(&p.path).unwrap();
        f.seek(SeekFrom::Start(p.offset.unwrap_or(0))).unwrap();
        let mut buf = vec![0; p.length as usize];
        f.read_exact(&mut buf).unwrap();
        out.extend(buf);
    }
    out
}

/// `r`'s parts are byte ranges of one file, contiguous from byte 0 to its end: the content
/// is the file, byte for byte.
pub fn assert_whole_file_in_ranges(r: &SourceRendition) {
    let file = &r.parts[0].path;
    let mut at = 0;
    for p in &r.parts {
        assert_eq!(&p.path, file, "{}", r.id);
        assert_eq!(p.offset, Some(at), "{}", r.id);
        at += p.length;
    }
    assert_eq!(concatenated(r), std::fs::read(file).unwrap(), "{}", r.id);
}
