//! An HLS presentation on disk (a packager's output, e.g. ffmpeg's `hls` muxer) as the
//! renditions `prepare` hashes: each media playlist's initialisation section and segments,
//! in playlist order, as parts of files. Parsing is m3u8-rs's.

use super::error::HlsError;
use super::source::{PartFiles, SourceRendition, codec_kinds};
use m3u8_rs::{AlternativeMediaType, MediaPlaylist, Playlist};
use std::path::Path;

/// The renditions of the master (or lone media) playlist at `path`: every variant stream
/// and every audio or video rendition with its own playlist (EXT-X-MEDIA with a URI).
/// I-frame playlists and subtitles are left out: they are other uses of the same bytes or
/// text tracks, which stay plain HTTP.
pub fn renditions(path: &Path) -> Result<Vec<SourceRendition>, HlsError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    variants(path)?
        .into_iter()
        .map(|v| {
            let media = read_media(&super::manifest::local_path(dir, &v.uri)?)?;
            media_rendition(dir, &v.uri, v.kind, v.bandwidth, v.resolution, &media)
        })
        .collect()
}

pub use super::source::Variant;

/// The media playlists of the master (or lone media) playlist at `path`, as
/// [`renditions`] takes them.
pub fn variants(path: &Path) -> Result<Vec<Variant>, HlsError> {
    let master = match read_playlist(path)? {
        Playlist::MediaPlaylist(_) => {
            return Ok(vec![Variant {
                uri: file_uri(path)?,
                kind: "muxed",
                bandwidth: None,
                resolution: None,
            }]);
        }
        Playlist::MasterPlaylist(master) => master,
    };
    let mut out: Vec<Variant> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for v in master.variants.iter().filter(|v| !v.is_i_frame) {
        if seen.insert(v.uri.clone()) {
            out.push(Variant {
                uri: v.uri.clone(),
                kind: variant_kind(v.codecs.as_deref(), v.audio.is_some()),
                bandwidth: Some(v.bandwidth),
                resolution: v.resolution.map(|r| format!("{}x{}", r.width, r.height)),
            });
        }
    }
    for alt in &master.alternatives {
        let kind = match alt.media_type {
            AlternativeMediaType::Audio => "audio",
            AlternativeMediaType::Video => "video",
            _ => continue,
        };
        let Some(uri) = &alt.uri else { continue };
        if seen.insert(uri.clone()) {
            out.push(Variant {
                uri: uri.clone(),
                kind,
                bandwidth: None,
                resolution: None,
            });
        }
    }
    if out.is_empty() {
        return Err(HlsError::NoMediaPlaylist(path.to_path_buf()));
    }
    Ok(out)
}

/// What a variant stream carries, by its CODECS: video, audio, or both in one stream. A
/// variant with an audio group may still name the group's codec (ffmpeg does): its audio
/// is the group's, so it is video. Without CODECS, muxed is the safe guess.
fn variant_kind(codecs: Option<&str>, has_audio_group: bool) -> &'static str {
    let Some(codecs) = codecs else { return "muxed" };
    match codec_kinds(codecs) {
        (true, true) if !has_audio_group => "muxed",
        (true, _) => "video",
        (false, true) => "audio",
        (false, false) => "muxed",
    }
}

fn read_playlist(path: &Path) -> Result<Playlist, HlsError> {
    let bytes = std::fs::read(path).map_err(|source| HlsError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    if !bytes.starts_with(b"#EXTM3U") {
        return Err(HlsError::NotHls(path.to_path_buf()));
    }
    m3u8_rs::parse_playlist_res(&bytes).map_err(|e| HlsError::Unreadable {
        path: path.to_path_buf(),
        detail: format!("{e:?}"),
    })
}

pub fn read_media(path: &Path) -> Result<MediaPlaylist, HlsError> {
    match read_playlist(path)? {
        Playlist::MediaPlaylist(m) => Ok(m),
        Playlist::MasterPlaylist(_) => Err(HlsError::NotMedia(path.to_path_buf())),
    }
}

fn file_uri(path: &Path) -> Result<String, HlsError> {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| HlsError::NoFileName(path.to_path_buf()))
}

/// One media playlist's parts: its EXT-X-MAP (each time it changes) and segments, with
/// byte ranges resolved (a range without an offset follows the previous one of the same
/// file, RFC 8216 §4.3.2.2), each checked to lie within its file.
fn media_rendition(
    master_dir: &Path,
    uri: &str,
    kind: &str,
    bandwidth: Option<u64>,
    resolution: Option<String>,
    media: &MediaPlaylist,
) -> Result<SourceRendition, HlsError> {
    if !media.end_list {
        return Err(HlsError::Live(uri.to_string()));
    }
    if media.segments.is_empty() {
        return Err(HlsError::NoSegments(uri.to_string()));
    }
    let playlist_path = super::manifest::local_path(master_dir, uri)?;
    let playlist_dir = playlist_path.parent().unwrap_or(master_dir).to_path_buf();
    let mut parts = Vec::new();
    let mut files = PartFiles::new(master_dir);
    let mut current_map: Option<MapKey> = None;
    let mut duration = 0.0f64;
    for seg in &media.segments {
        if let Some(map) = &seg.map {
            let key = (
                map.uri.clone(),
                map.byte_range.as_ref().map(|r| (r.length, r.offset)),
            );
            if current_map.as_ref() != Some(&key) {
                let range = map
                    .byte_range
                    .as_ref()
                    .map(|r| (r.length, Some(r.offset.unwrap_or(0))));
                parts.push(files.part(&playlist_dir, &map.uri, range)?);
                current_map = Some(key);
            }
        }
        let range = seg.byte_range.as_ref().map(|r| (r.length, r.offset));
        parts.push(files.part(&playlist_dir, &seg.uri, range)?);
        duration += f64::from(seg.duration);
    }
    Ok(SourceRendition {
        id: uri.to_string(),
        kind: kind.to_string(),
        bandwidth,
        resolution,
        duration_secs: duration,
        parts,
    })
}

/// An EXT-X-MAP as written: its URI and byte range (length, offset).
type MapKey = (String, Option<(u64, Option<u64>)>);
