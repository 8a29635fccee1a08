//! The presentation manifest (`NAME.ppspp.json`, docs/FORMATS.md): each rendition of an HLS
//! or DASH presentation as one PPSPP content, with its root, tree file and the parts
//! (files or byte ranges) it is made of. `prepare` writes it; `seed` and pages read it.

pub use super::error::ManifestError;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// What the `format` field says.
pub const FORMAT: &str = "ppspp-presentation";
/// The version this build writes and reads.
pub const VERSION: u32 = 1;
/// The manifest's file name beside a master playlist or MPD `NAME.m3u8` / `NAME.mpd`.
pub const SUFFIX: &str = ".ppspp.json";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    pub format: String,
    pub version: u32,
    /// `vod`: every rendition's content is complete and fixed.
    #[serde(rename = "type")]
    pub kind: String,
    /// The master playlist or MPD, relative to the manifest.
    pub source: String,
    pub renditions: Vec<Rendition>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Rendition {
    /// The HLS media playlist's URI or the DASH Representation's id.
    pub id: String,
    /// `video`, `audio` or `muxed` (both in one stream, as MPEG-TS often is).
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution: Option<String>,
    /// The swarm's root hash, hex.
    pub root: String,
    /// The Merkle hash function (`sha256`, …) and chunk size in bytes.
    pub hash: String,
    pub chunk_size: u32,
    /// The content's length: the parts' lengths summed.
    pub length: u64,
    /// The hash tree file (docs/FORMATS.md), relative to the manifest.
    pub tree: String,
    /// The content, in order.
    pub parts: Vec<Part>,
}

/// One piece of a rendition's content: a whole file, or `length` bytes of it from `offset`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Part {
    /// The file's URL, relative to the manifest.
    pub uri: String,
    /// Where in the file the part starts; absent: the part is the whole file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    pub length: u64,
}

/// Where the manifest of the presentation at `source` goes (`master.m3u8` →
/// `master.ppspp.json`).
pub fn path_for(source: &Path) -> PathBuf {
    let stem = source
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "presentation".into());
    source.with_file_name(format!("{stem}{SUFFIX}"))
}

impl Manifest {
    /// Reads and checks a manifest file.
    pub fn read(path: &Path) -> Result<Manifest, ManifestError> {
        let text = std::fs::read_to_string(path).map_err(|source| ManifestError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let manifest: Manifest =
            serde_json::from_str(&text).map_err(|source| ManifestError::NotAManifest {
                path: path.to_path_buf(),
                source,
            })?;
        if manifest.format != FORMAT {
            return Err(ManifestError::WrongFormat {
                path: path.to_path_buf(),
                format: manifest.format,
            });
        }
        if manifest.version != VERSION {
            return Err(ManifestError::WrongVersion {
                path: path.to_path_buf(),
                version: manifest.version,
            });
        }
        if manifest.kind != "vod" {
            return Err(ManifestError::NotOnDemand {
                path: path.to_path_buf(),
                kind: manifest.kind,
            });
        }
        for r in &manifest.renditions {
            let sum = r
                .parts
                .iter()
                .try_fold(0u64, |a, p| a.checked_add(p.length));
            if sum != Some(r.length) {
                return Err(ManifestError::PartsMismatch {
                    path: path.to_path_buf(),
                    id: r.id.clone(),
                    length: r.length,
                });
            }
        }
        Ok(manifest)
    }

    /// Writes the manifest through a temporary file renamed into place.
    pub fn write(&self, path: &Path) -> Result<(), ManifestError> {
        write_json(path, self)
    }
}

/// Writes `value` as JSON through a temporary file renamed into place: a reader (the web
/// server, while a live source rewrites it) sees the old file or the new, never half.
pub fn write_json(path: &Path, value: &impl Serialize) -> Result<(), ManifestError> {
    let mut text = serde_json::to_string_pretty(value).map_err(ManifestError::Encode)?;
    text.push('\n');
    let mut part = path.as_os_str().to_owned();
    part.push(".part");
    let part = PathBuf::from(part);
    std::fs::write(&part, text)
        .and_then(|()| std::fs::rename(&part, path))
        .map_err(|source| {
            let _ = std::fs::remove_file(&part);
            ManifestError::Write {
                path: path.to_path_buf(),
                source,
            }
        })
}

/// A manifest-relative URI as a path under `dir` (the manifest's folder), `%XX` decoded.
/// URIs that leave the folder or name another host are refused: a seeder serves only
/// what sits beside its manifest.
pub fn local_path(dir: &Path, uri: &str) -> Result<PathBuf, ManifestError> {
    if uri.contains("://") || uri.starts_with('/') {
        return Err(ManifestError::NotRelative(uri.to_string()));
    }
    let path = uri.split(['?', '#']).next().unwrap_or(uri);
    let decoded = percent_decode(path).ok_or_else(|| ManifestError::BadEscape(uri.to_string()))?;
    let mut out = dir.to_path_buf();
    for seg in decoded.split('/') {
        match seg {
            "" | "." => {}
            ".." => return Err(ManifestError::LeavesFolder(uri.to_string())),
            s => out.push(s),
        }
    }
    Ok(out)
}

/// `path` (under `dir`) as a URI relative to `dir`, `/`-separated, with the characters a
/// URL cannot carry as they are `%XX`-escaped.
pub fn relative_uri(dir: &Path, path: &Path) -> Result<String, ManifestError> {
    let rel = path
        .strip_prefix(dir)
        .map_err(|_| ManifestError::NotInside {
            path: path.to_path_buf(),
            dir: dir.to_path_buf(),
        })?;
    let segs: Vec<String> = rel
        .components()
        .map(|c| percent_encode(&c.as_os_str().to_string_lossy()))
        .collect();
    Ok(segs.join("/"))
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_manifest_sits_beside_its_source() {
        assert_eq!(
            path_for(Path::new("/srv/v/master.m3u8")),
            PathBuf::from("/srv/v/master.ppspp.json")
        );
        assert_eq!(
            path_for(Path::new("manifest.mpd")),
            PathBuf::from("manifest.ppspp.json")
        );
    }

    #[test]
    fn uris_and_paths_round_trip_with_escapes() {
        let dir = Path::new("/srv/v");
        let p = Path::new("/srv/v/720p/seg 1.m4s");
        let uri = relative_uri(dir, p).unwrap();
        assert_eq!(uri, "720p/seg%201.m4s");
        assert_eq!(local_path(dir, &uri).unwrap(), p);
        assert_eq!(
            local_path(dir, "./a/b.ts?token=1").unwrap(),
            PathBuf::from("/srv/v/a/b.ts")
        );
    }

    #[test]
    fn uris_that_leave_the_folder_are_refused() {
        let dir = Path::new("/srv/v");
        assert!(
            local_path(dir, "../secret")
                .unwrap_err()
                .to_string()
                .contains("leaves")
        );
        assert!(local_path(dir, "https://cdn/x.ts").is_err());
        assert!(local_path(dir, "/etc/passwd").is_err());
        assert!(local_path(dir, "a%2").is_err());
        assert!(relative_uri(dir, Path::new("/srv/other/x.ts")).is_err());
    }
}
