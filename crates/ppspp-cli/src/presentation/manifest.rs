//! The presentation manifest (`NAME.ppspp.json`, docs/FORMATS.md): each rendition of an HLS
//! or DASH presentation as one PPSPP content, with its root, tree file and the parts
//! (files or byte ranges) it is made of. `prepare` writes it; `seed` and pages read it.

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
    pub fn read(path: &Path) -> Result<Manifest, String> {
        let shown = path.display();
        let text =
            std::fs::read_to_string(path).map_err(|e| format!("cannot read {shown}: {e}"))?;
        let manifest: Manifest = serde_json::from_str(&text)
            .map_err(|e| format!("{shown} is not a presentation manifest: {e}"))?;
        if manifest.format != FORMAT {
            return Err(format!(
                "{shown}: format is '{}', not '{FORMAT}'",
                manifest.format
            ));
        }
        if manifest.version != VERSION {
            return Err(format!(
                "{shown}: version {} (this ppspp reads version {VERSION}); prepare it again",
                manifest.version
            ));
        }
        if manifest.kind != "vod" {
            return Err(format!(
                "{shown}: type '{}': only on-demand (vod) presentations are seeded from a manifest",
                manifest.kind
            ));
        }
        for r in &manifest.renditions {
            let sum = r
                .parts
                .iter()
                .try_fold(0u64, |a, p| a.checked_add(p.length));
            if sum != Some(r.length) {
                return Err(format!(
                    "{shown}: rendition {}: its parts do not add up to its length {}",
                    r.id, r.length
                ));
            }
        }
        Ok(manifest)
    }

    /// Writes the manifest through a temporary file renamed into place.
    pub fn write(&self, path: &Path) -> Result<(), String> {
        write_json(path, self)
    }
}

/// Writes `value` as JSON through a temporary file renamed into place: a reader (the web
/// server, while a live source rewrites it) sees the old file or the new, never half.
pub fn write_json(path: &Path, value: &impl Serialize) -> Result<(), String> {
    let mut text = serde_json::to_string_pretty(value).map_err(|e| e.to_string())?;
    text.push('\n');
    let mut part = path.as_os_str().to_owned();
    part.push(".part");
    let part = PathBuf::from(part);
    std::fs::write(&part, text)
        .and_then(|()| std::fs::rename(&part, path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&part);
            format!("cannot write {}: {e}", path.display())
        })
}

/// A manifest-relative URI as a path under `dir` (the manifest's folder), `%XX` decoded.
/// URIs that leave the folder or name another host are refused: a seeder serves only
/// what sits beside its manifest.
pub fn local_path(dir: &Path, uri: &str) -> Result<PathBuf, String> {
    if uri.contains("://") || uri.starts_with('/') {
        return Err(format!(
            "'{uri}' is not a path relative to the manifest: prepare reads and seeds local files only"
        ));
    }
    let path = uri.split(['?', '#']).next().unwrap_or(uri);
    let decoded = percent_decode(path).ok_or_else(|| format!("'{uri}' has a bad %-escape"))?;
    let mut out = dir.to_path_buf();
    for seg in decoded.split('/') {
        match seg {
            "" | "." => {}
            ".." => return Err(format!("'{uri}' leaves the manifest's folder")),
            s => out.push(s),
        }
    }
    Ok(out)
}

/// `path` (under `dir`) as a URI relative to `dir`, `/`-separated, with the characters a
/// URL cannot carry as they are `%XX`-escaped.
pub fn relative_uri(dir: &Path, path: &Path) -> Result<String, String> {
    let rel = path.strip_prefix(dir).map_err(|_| {
        format!(
            "{} is not inside {}: keep the presentation's files under its master playlist's folder",
            path.display(),
            dir.display()
        )
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
        assert!(local_path(dir, "../secret").unwrap_err().contains("leaves"));
        assert!(local_path(dir, "https://cdn/x.ts").is_err());
        assert!(local_path(dir, "/etc/passwd").is_err());
        assert!(local_path(dir, "a%2").is_err());
        assert!(relative_uri(dir, Path::new("/srv/other/x.ts")).is_err());
    }
}
